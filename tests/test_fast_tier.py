"""The fast tier (`python -m pytest -m "not slow"`, tests/conftest.py) keeps what a
contributor's inner loop needs and leaves out what is slow: checked by collecting it as a
contributor would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

# Test files of the engine and the command line with no fast test at all, and why.
ALL_SLOW = {
    "engine/test_chaos.py": "one seeded crawl with random controls, 5 s",
    "engine/test_row_views.py": "one crawl of 10,000 workers, 1.5 s",
}


def collected(*args: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *args, str(TESTS)],
        capture_output=True, text=True, timeout=120, cwd=TESTS.parent, check=True,
    )  # fmt: skip
    return {line for line in result.stdout.splitlines() if "::" in line}


# Slow itself (two collections of the suite, 12 s): CI runs it with everything.
@pytest.mark.slow
def test_the_fast_tier_leaves_out_the_slow_and_keeps_the_fast() -> None:
    fast = collected("-m", "not slow")
    everything = collected()
    assert fast < everything
    # A whole slow folder, a test marked slow in a fast folder, and a fast one.
    assert not any(test.startswith("tests/tui/") for test in fast)
    assert "tests/cli/test_plan.py::test_the_tui_joins_a_cluster_crawl" in everything
    assert "tests/cli/test_plan.py::test_the_tui_joins_a_cluster_crawl" not in fast
    assert "tests/test_import_cycles.py::test_the_finder_finds_a_circle_and_only_a_circle" in fast
    # Every file of the engine's and the command line's tests is in the tier, or says why not.
    files = {test.split("::")[0].removeprefix("tests/") for test in fast}
    for folder in ("engine", "cli"):
        for path in sorted((TESTS / folder).glob("test_*.py")):
            name = f"{folder}/{path.name}"
            assert (name in files) != (name in ALL_SLOW), name
