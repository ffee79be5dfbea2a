"""On CI a skip fails the run (tests/conftest.py), unless the test says why it may skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

SAMPLE = """
import pytest

def test_skips():
    pytest.skip("no redis-server")

@pytest.fixture
def part():
    pytest.skip("no chromium")

def test_skips_in_its_fixture(part):
    pass

@pytest.mark.ci_may_skip("only on some kernels")
def test_may_skip():
    pytest.skip("not this kernel")

@pytest.mark.xfail(reason="known")
def test_expected_to_fail():
    assert False

def test_passes():
    pass
"""


# A module that skips while it is collected: none of its tests ever reports.
MODULE_SKIP = """
import pytest

pytest.importorskip("no_such_module_for_the_test")

def test_never_collected():
    pass
"""


def run_sample(
    tmp_path: Path, ci: str | None, sample: str = SAMPLE, extra: tuple[str, ...] = ()
) -> str:
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_sample.py").write_text(sample)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), *extra, str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return f"{done.stdout}\nexit code {done.returncode}"


@pytest.mark.parametrize(
    ("ci", "extra"), [("true", ()), ("1", ()), ("true", ("-n", "2"))],
    ids=["true", "1", "two-at-a-time"],  # the last as the README's command runs the tests
)  # fmt: skip
@pytest.mark.slow
def test_on_ci_a_skip_fails_unless_the_test_says_why(
    tmp_path: Path, ci: str, extra: tuple[str, ...]
) -> None:
    out = run_sample(tmp_path, ci, extra=extra)
    # A skip in a fixture fails the test's setup: pytest counts that as an error.
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed, 1 error" in out, out
    assert "FAILED test_sample.py::test_skips" in out, out
    assert "ERROR test_sample.py::test_skips_in_its_fixture" in out, out
    assert "skipped on CI (no redis-server): CI must run every test" in out, out
    assert "skipped on CI (no chromium): CI must run every test" in out, out
    assert "SKIPPED [1] test_sample.py" in out and "not this kernel" in out, out


@pytest.mark.parametrize("ci", [None, "false", ""])
@pytest.mark.slow
def test_off_ci_a_skip_is_a_skip(tmp_path: Path, ci: str | None) -> None:
    out = run_sample(tmp_path, ci)
    assert "1 passed, 3 skipped, 1 xfailed" in out, out


@pytest.mark.slow
def test_on_ci_a_module_skipped_while_collected_fails_the_run(tmp_path: Path) -> None:
    out = run_sample(tmp_path, "true", MODULE_SKIP)
    assert "1 error in" in out and "skipped in" not in out, out
    assert "ERROR test_sample.py" in out, out
    assert "skipped on CI while collecting (could not import 'no_such_module_for_the_test'" in out
    assert "exit code 0" not in out, out


@pytest.mark.slow
def test_off_ci_a_module_skipped_while_collected_is_a_skip(tmp_path: Path) -> None:
    out = run_sample(tmp_path, None, MODULE_SKIP)
    assert "1 skipped in" in out and "error" not in out, out  # exit code 5: nothing ran
