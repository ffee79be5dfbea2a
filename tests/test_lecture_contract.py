"""The lecture screens know a stage only through its contract (engine/lecture/observe.py
and snapshot.py), as the crawl's screens know a crawl through engine/observe.py: no
screen or widget imports a stage's loop, queue or task classes, so the same screens show
a recording and a stage in another process."""

from __future__ import annotations

import ast
from pathlib import Path

import crawlscope.tui.lecture

LECTURE_ENGINE = "crawlscope.engine.lecture"
CONTRACT = {f"{LECTURE_ENGINE}.observe", f"{LECTURE_ENGINE}.snapshot"}
# The lecture app opens a stage for `crawlscope tui --engine ...`, which hands it only a
# config: it, and nothing else in tui/lecture, may open the live stage (engine/lecture/
# live.py, the one reader of a stage's insides). It never reads the stage classes either.
OPENERS = {"app.py": {f"{LECTURE_ENGINE}.live"}}


def imported(path: Path) -> set[str]:
    """The absolute modules `path` imports (each `from M import name` as M and M.name)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def lecture_engine_imports(path: Path) -> set[str]:
    """The modules of engine/lecture that `path` imports: `from crawlscope.engine.lecture
    import stages` counts as the module it names."""
    modules = set()
    for name in imported(path):
        if name == LECTURE_ENGINE or not name.startswith(LECTURE_ENGINE + "."):
            continue
        # crawlscope.engine.lecture.X[.Y]: the module is X.
        modules.add(".".join(name.split(".")[:4]))
    return modules


def test_the_lecture_screens_import_only_the_stage_contract() -> None:
    root = Path(crawlscope.tui.lecture.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert root / "stage_screen.py" in files and root / "widgets" / "task_chains.py" in files
    wrong = {}
    for path in files:
        allowed = CONTRACT | OPENERS.get(str(path.relative_to(root)), set())
        extra = lecture_engine_imports(path) - allowed
        if extra:
            wrong[str(path.relative_to(root))] = sorted(extra)
    assert wrong == {}


def test_the_check_sees_an_import_of_a_stage_class(tmp_path: Path) -> None:
    # The check itself, on a file that reaches into stage 2 as stage_screen.py once did.
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from crawlscope.engine.lecture.stage_generators import GeneratorCrawler\n"
        "from crawlscope.engine.lecture import stages\n"
        "import crawlscope.engine.lecture.snapshot\n"
    )
    assert lecture_engine_imports(sample) == {
        f"{LECTURE_ENGINE}.stage_generators",
        f"{LECTURE_ENGINE}.stages",
        f"{LECTURE_ENGINE}.snapshot",
    }
