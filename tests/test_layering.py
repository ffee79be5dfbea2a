"""The engine never imports the UI: importing all of it pulls in neither textual nor rich.
The command line imports it only in the commands that draw, when they do."""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import crawlscope.engine
import crawlscope.tui


def engine_modules() -> list[str]:
    # walk_packages, not iter_modules: a subpackage's modules must be covered too, or a
    # UI import in engine/lecture/ would pass unseen.
    prefix = crawlscope.engine.__name__ + "."
    return [info.name for info in pkgutil.walk_packages(crawlscope.engine.__path__, prefix)]


def test_the_walk_reaches_every_subpackage() -> None:
    modules = engine_modules()
    for name in ("observe.introspect", "lecture.stage_generators", "trace.replay", "sites.hostile"):
        assert f"crawlscope.engine.{name}" in modules


def ui_after_importing(modules: list[str]) -> list[str]:
    """The UI modules a fresh interpreter holds after importing `modules` (this test
    process has imported textual already)."""
    script = "\n".join(
        [
            "import importlib, sys",
            *(f"importlib.import_module({name!r})" for name in modules),
            "ui = ('textual', 'rich', 'textual_serve')",
            "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in ui)))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    return result.stdout.split()


@pytest.mark.slow
def test_importing_the_whole_engine_imports_no_ui() -> None:
    assert ui_after_importing(engine_modules()) == []


def test_the_command_line_imports_the_screen_only_to_draw() -> None:
    # Every module of crawlscope.cli, imported: Textual, Rich and textual-serve come only
    # inside the functions of the commands that draw, never with a module.
    import crawlscope.cli

    prefix = crawlscope.cli.__name__ + "."
    modules = [info.name for info in pkgutil.walk_packages(crawlscope.cli.__path__, prefix)]
    assert f"{prefix}crawl" in modules and f"{prefix}headless" in modules
    assert ui_after_importing(modules) == []


# ---- contracts: what the drawing code may know of the engine -----------------------------
#
# The widgets and screens draw a crawl they are handed (engine/observe/contract.py's ObservedCrawl,
# live, replayed, remote or clustered alike), so they may import only the modules that
# describe one: its protocol, its plain data, and pure functions of that data. Not the
# crawler, the frontier, the network or the cluster: a screen that reached into those
# would work for the live crawl and break for every other.
CONTRACT = {
    "crawlscope.engine.config",  # the config a crawl reports (ObservedCrawl.config)
    "crawlscope.engine.lints.lint",  # a snapshot's warnings
    "crawlscope.engine.observe.code",  # a frame's source: own, aiohttp's, asyncio's modules
    "crawlscope.engine.observe.contract",
    "crawlscope.engine.records",
    "crawlscope.engine.redirects",
    "crawlscope.engine.observe.snapshot",
    "crawlscope.engine.observe.text",
    "crawlscope.engine.urls",
    "crawlscope.engine.observe.worker_detail",  # one worker in full (WorkerDetails)
    "crawlscope.engine.observe.workers",
    # The recorded past (the flight recorder's ring of plain events, and its saves) and
    # the folds over it that draw time: the timeline and a fetch's waterfall.
    "crawlscope.engine.trace.flight",
    "crawlscope.engine.trace.flight_saver",
    "crawlscope.engine.observe.timeline",
    "crawlscope.engine.observe.waterfall",
    "crawlscope.engine.trace.why",  # a URL's fate, read from the recorded past's events
}
TUI = Path(crawlscope.tui.__file__).parent
DRAWING = sorted([*(TUI / "widgets").glob("*.py"), *(TUI / "screens").glob("*.py")])


def engine_imports(path: Path) -> set[str]:
    """The crawlscope.engine modules `path` imports, at any depth of its code, and those it
    reaches through a package it imports (`from crawlscope import engine`, then
    `engine.crawler.Crawler`): the package itself when what it reaches is no module."""
    package = "crawlscope." + ".".join(path.relative_to(TUI.parent).with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    bound: dict[str, str] = {}  # a name an import binds -> the module or package it names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            for alias in node.names:
                # "import a.b" binds a; "import a.b as x" binds x to a.b.
                top = alias.name.split(".")[0]
                bound[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            # "from crawlscope.engine import snapshot" imports a module from a package.
            names = [base]
            if _is_package(base):
                names = [f"{base}.{alias.name}" for alias in node.names]
                bound.update({alias.asname or alias.name: f"{base}.{alias.name}"
                              for alias in node.names})  # fmt: skip
        else:
            continue
        found.update(name for name in names if name.startswith("crawlscope.engine."))
    # What a package bound to a name is used for: engine.crawler.Crawler is the crawler.
    for node in ast.walk(tree):
        dotted = _dotted(node) if isinstance(node, ast.Attribute) else None
        if dotted is None:
            continue
        head, _, rest = dotted.partition(".")
        if head in bound and _is_package(bound[head]):
            reached = _module_of(f"{bound[head]}.{rest}")
            if reached == "crawlscope.engine" or reached.startswith("crawlscope.engine."):
                found.add(reached)
    return found


def _dotted(node: ast.Attribute) -> str | None:
    """`a.b.c` for an attribute chain on a name, else None (a call's result, a subscript)."""
    parts = [node.attr]
    value = node.value
    while isinstance(value, ast.Attribute):
        parts.append(value.attr)
        value = value.value
    if not isinstance(value, ast.Name):
        return None
    return ".".join([value.id, *reversed(parts)])


def _module_of(dotted: str) -> str:
    """The longest leading part of `dotted` that is a module (or package)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        try:
            if importlib.util.find_spec(name) is not None:
                return name
        except ImportError:  # a part before it is a module, not a package
            continue
    return dotted


def _is_package(name: str) -> bool:
    try:
        spec = importlib.util.find_spec(name)
    except ImportError:
        return False
    return spec is not None and spec.submodule_search_locations is not None


def test_the_drawing_code_imports_only_the_contract_from_the_engine() -> None:
    assert len(DRAWING) > 10
    seen: set[str] = set()
    beyond: dict[str, set[str]] = {}
    for path in DRAWING:
        modules = engine_imports(path)
        seen |= modules
        if modules - CONTRACT:
            beyond[path.name] = modules - CONTRACT
    assert not beyond, beyond
    # The scan finds what is there: the contract's core is imported, by name.
    assert {"crawlscope.engine.observe.contract", "crawlscope.engine.observe.snapshot"} <= seen


def test_the_contract_scan_sees_relative_and_nested_imports(tmp_path: Path) -> None:
    widget = TUI / "widgets" / "probe_for_the_test.py"
    assert not widget.exists()
    code = "def f():\n    from ...engine import crawler\n    import crawlscope.engine.frontier\n"
    widget.write_text(code)
    try:
        assert engine_imports(widget) == {
            "crawlscope.engine.crawler",
            "crawlscope.engine.frontier",
        }
    finally:
        widget.unlink()


def test_the_contract_scan_sees_the_engine_reached_through_a_package() -> None:
    widget = TUI / "widgets" / "probe_for_the_test.py"
    assert not widget.exists()
    widget.write_text(
        "from crawlscope import engine\n"
        "from ... import engine as eng\n"
        "import crawlscope\n"
        "from crawlscope.engine import cluster\n"
        "def f():\n"
        "    return (engine.crawler.Crawler, eng.frontier.Frontier(),\n"
        "            crawlscope.engine.plan.CrawlPlan, cluster.node, engine.__doc__)\n"
    )
    try:
        assert engine_imports(widget) == {
            "crawlscope.engine",  # the package itself: not in the contract either
            "crawlscope.engine.cluster",
            "crawlscope.engine.cluster.node",
            "crawlscope.engine.crawler",
            "crawlscope.engine.frontier",
            "crawlscope.engine.plan",
        }
    finally:
        widget.unlink()


# ---- the lecture's contract ------------------------------------------------------------
#
# The lecture screens (tui/lecture/) know a stage only through engine/lecture/observe.py
# and snapshot.py, as the crawl's screens know a crawl through engine/observe/contract.py: none
# imports a stage's loop, queue or task classes, so the same panels show a stage crawling
# here, a recording and a stage in another process. The lecture app opens the live stage
# for `crawlscope tui --engine ...`, which hands it only a config: it, and nothing else
# there, may import engine/lecture/live.py (the one reader of a stage's insides).
LECTURE = TUI / "lecture"
LECTURE_CONTRACT = {
    "crawlscope.engine.lecture.observe",
    "crawlscope.engine.lecture.snapshot",
    "crawlscope.engine.lecture.step_lanes",  # who ran when, read from the snapshots alone
    "crawlscope.engine.lecture.source",  # the stage modules as shipped, looked up by name
}
LECTURE_OPENERS = {"app.py": {"crawlscope.engine.lecture.live"}}


def lecture_imports(path: Path) -> set[str]:
    """The engine/lecture modules `path` imports (a name from one counts as the module)."""
    return {
        ".".join(name.split(".")[:4])
        for name in engine_imports(path)
        if name.startswith("crawlscope.engine.lecture.")
    }


def test_the_lecture_screens_import_only_the_stage_contract() -> None:
    files = sorted(LECTURE.rglob("*.py"))
    assert LECTURE / "stage_screen.py" in files and LECTURE / "widgets" / "task_chains.py" in files
    beyond = {}
    for path in files:
        allowed = LECTURE_CONTRACT | LECTURE_OPENERS.get(str(path.relative_to(LECTURE)), set())
        extra = lecture_imports(path) - allowed
        if extra:
            beyond[str(path.relative_to(LECTURE))] = extra
    assert not beyond, beyond


def test_the_lecture_scan_sees_a_stage_class_however_it_is_imported() -> None:
    # As stage_screen.py once did, and the ways a later one might.
    probe = LECTURE / "probe_for_the_test.py"
    assert not probe.exists()
    probe.write_text(
        "from crawlscope.engine.lecture.stage_generators import GeneratorCrawler\n"
        "from crawlscope.engine.lecture import stages\n"
        "def f():\n    from ...engine.lecture.stage_callbacks import CallbackCrawler\n"
        "import crawlscope.engine.lecture.snapshot\n"
    )
    try:
        assert lecture_imports(probe) == {
            "crawlscope.engine.lecture.stage_generators",
            "crawlscope.engine.lecture.stages",
            "crawlscope.engine.lecture.stage_callbacks",
            "crawlscope.engine.lecture.snapshot",
        }
    finally:
        probe.unlink()


# ---- contracts: who assembles a crawl ----------------------------------------------------
#
# A crawl is put together in one place, engine/plan.py's CrawlPlan.open(), from a plan the
# command line builds from its options (crawlscope/cli/crawl_plan.py): so every option
# means the same in every command. Each other place that may make one says why.
ASSEMBLERS = {
    "Crawler": {
        "engine/plan.py": "open() itself",
        "engine/cluster/node.py": "a node of a Redis crawl, made by the plan",
        "engine/lecture/stages.py": "the chapter's three engines side by side, by name",
    },
    "redis_crawler": {"engine/plan.py": "open() itself"},
    "CrawlPlan": {
        "crawlscope/cli/crawl_plan.py": "the plan from the options, for every command",
        "tui/startup.py": "LiveCrawl's plan of the demo site, for tests and benchmarks",
        "tui/screenshots.py": "the docs' pictures, made by a tool of their own",
        "tui/timing_screenshots.py": "the same tool's timing pictures (a dense page)",
        "engine/cluster/child.py": "a process of --procs: its parent's plan, sent as JSON",
    },
}
PACKAGE_ROOT = TUI.parent


def calls_to(path: Path, names: set[str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in names:
                found.add(name)
    return found


@pytest.mark.slow
def test_only_the_plan_and_the_command_line_assemble_a_crawl() -> None:
    sources = sorted(
        path
        for folder in ("engine", "tui", "crawlscope")
        for path in (PACKAGE_ROOT / folder).rglob("*.py")
    )
    assert len(sources) > 100
    makers: dict[str, set[str]] = {name: set() for name in ASSEMBLERS}
    for path in sources:
        where = path.relative_to(PACKAGE_ROOT).as_posix()
        for name in calls_to(path, set(ASSEMBLERS)):
            makers[name].add(where)
    for name, allowed in ASSEMBLERS.items():
        assert makers[name] <= set(allowed), (name, makers[name] - set(allowed))
        # Each exception is still one: a reason left behind by a move would hide the next.
        assert makers[name] == set(allowed), (name, set(allowed) - makers[name])


def test_the_tests_are_laid_out_like_the_code() -> None:
    # A new test goes beside the tests of the code it covers (README, "Layout"); at the
    # top stand only the suite's own rules.
    tests = Path(__file__).parent
    assert sorted(path.name for path in tests.glob("test_*.py")) == [
        "test_ci_skips.py",
        "test_fast_tier.py",
        "test_import_cycles.py",
        "test_layering.py",
    ]
    folders = {path.parent.name for path in tests.glob("*/test_*.py")}
    assert folders == {
        "bench", "cli", "cluster", "docs", "engine", "hostile", "lecture", "remote", "trace",
        "tui",
    }  # fmt: skip


# ---- contracts: engine/ grouped by idea ---------------------------------------------------
#
# engine/'s top holds the crawl and what every crawl needs; each observing idea is a
# subpackage the crawl uses and that never uses the crawl back: the crawler hands itself in
# (engine/timing/loop_health.py names what it reads as a Protocol), so an idea can be read,
# tested and moved without the machinery that fetches. And the contract a viewer depends on
# (engine/observe/) knows only plain data.
ENGINE = Path(crawlscope.engine.__file__).parent
IDEAS = ("observe", "timing", "lints", "hosts", "exchange")
MACHINERY = ("crawler", "plan", "connections", "sitemaps", "cluster", "remote", "lecture",
             "trace", "sites")  # fmt: skip
OBSERVE_MAY_READ = ("observe", "config", "records", "redirects", "urls", "lints.lint",
                    "timing.per_worker")  # fmt: skip


def idea_imports(idea: str) -> dict[str, set[str]]:
    """Each module of engine/<idea>/ -> the engine modules it imports, names relative to
    crawlscope.engine."""
    found = {}
    for path in sorted((ENGINE / idea).glob("*.py")):
        found[path.name] = {
            name.removeprefix("crawlscope.engine.") for name in engine_imports(path)
        }
    return found


def _under(name: str, places: tuple[str, ...]) -> bool:
    return any(name == place or name.startswith(place + ".") for place in places)


def test_the_top_of_the_engine_holds_at_most_fifteen_modules() -> None:
    top = sorted(path.name for path in ENGINE.glob("*.py"))
    assert "crawler.py" in top and len(top) <= 15, top
    assert {path.name for path in ENGINE.iterdir() if path.is_dir()} >= set(IDEAS)


def test_the_observing_ideas_never_reach_into_the_machinery() -> None:
    reached = {
        f"{idea}/{module}": {name for name in names if _under(name, MACHINERY)}
        for idea in IDEAS
        for module, names in idea_imports(idea).items()
    }
    assert len(reached) > 20
    assert not {where: names for where, names in reached.items() if names}


def test_the_viewers_contract_knows_only_plain_data() -> None:
    beyond = {
        module: {name for name in names if not _under(name, OBSERVE_MAY_READ)}
        for module, names in idea_imports("observe").items()
    }
    assert not {module: names for module, names in beyond.items() if names}


def test_the_screens_and_widgets_stay_small() -> None:
    # A screen that grows past 500 lines holds more than one idea (panels.py did, at 589,
    # until the direct paint left it): move the new idea out, as screens/direct_paint.py.
    sizes = {
        path.relative_to(TUI).as_posix(): len(path.read_text().splitlines()) for path in DRAWING
    }
    assert "screens/panels.py" in sizes
    assert {name: n for name, n in sizes.items() if n >= 500} == {}
