"""Every file a user names is checked before it is read: a regular file, under its cap.
`/dev/zero`, a FIFO, a directory or a file over the cap is one line and exit status 2,
through the real commands, never a read of the whole input (the commands run under a
memory limit, so a loader that reads /dev/zero whole fails fast rather than fill the
machine), a hang or a traceback."""

from __future__ import annotations

import os
import resource
import subprocess
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from crawlscope.engine.exchange.user_files import MiB
from crawlscope.engine.lecture.replay import MAX_BYTES as LECTURE_MAX_BYTES
from crawlscope.engine.lecture.replay import load_lecture
from crawlscope.engine.trace.load import load_recording
from crawlscope.engine.trace.replay import MAX_BYTES, ReplayError
from helpers import CLI

LIMIT = 1536 * MiB  # address space: the command's own, with room, and no 20 GB read
LECTURE_START = b'{"kind": "start", "recording": "lecture", "version": 1, "wall": 1.0}\n'


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run_limited(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL, preexec_fn=limited,
    )  # fmt: skip


def sparse(path: Path, size: int, head: bytes = b"") -> Path:
    """A file of `size` bytes that costs no disk: `head`, then a hole."""
    with path.open("wb") as file:
        file.write(head)
        file.truncate(size)
    return path


def one_line(result: subprocess.CompletedProcess[str], *wanted: str) -> None:
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("crawlscope: "), result.stderr
    for each in wanted:
        assert each in result.stderr, result.stderr


# Each kind of input a loader must refuse unread, and what the refusal says.
KINDS: dict[str, Callable[[Path], tuple[str, str]]] = {
    "dev-zero": lambda _tmp: ("/dev/zero", "it is a character device, not a regular file"),
    "fifo": lambda tmp: (
        (os.mkfifo(tmp / "fifo"), str(tmp / "fifo"))[1],  # open to read: waits for a writer
        "it is a FIFO, not a regular file",
    ),
    "directory": lambda tmp: (str(tmp), "it is a directory, not a regular file"),
    "crawl-over-cap": lambda tmp: (
        str(sparse(tmp / "big.jsonl", MAX_BYTES + 1)),
        "is too big for a crawl recording (256.0 MiB, at most 256 MiB)",
    ),
    "lecture-over-cap": lambda tmp: (
        str(sparse(tmp / "big.jsonl", LECTURE_MAX_BYTES + 1, LECTURE_START)),
        "is too big for a lecture recording (64.0 MiB, at most 64 MiB)",
    ),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("command", ["replay", "serve"])
@pytest.mark.slow
def test_a_recording_that_is_no_regular_file_or_too_big_is_refused_unread(
    tmp_path: Path, kind: str, command: str
) -> None:
    path, says = KINDS[kind](tmp_path)
    args = ["replay", path] if command == "replay" else ["serve", "--port", "0", "--replay", path]
    one_line(run_limited(*args), says)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory"])
def test_a_config_file_that_is_no_regular_file_is_refused_unread(tmp_path: Path, kind: str) -> None:
    path, says = KINDS[kind](tmp_path)
    one_line(run_limited("crawl", "--config", path, "http://127.0.0.1:9/"), says)


def test_a_config_file_over_its_cap_or_not_utf8_is_one_line(tmp_path: Path) -> None:
    big = sparse(tmp_path / "big.toml", 2 * MiB)
    one_line(run_limited("crawl", "--config", str(big), "http://127.0.0.1:9/"),
             "is too big for a config file (2 MiB, at most 1 MiB)")  # fmt: skip
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'user-agent = "caf\xe9"\n')
    one_line(run_limited("crawl", "--config", str(latin), "http://127.0.0.1:9/"),
             "not valid TOML: not UTF-8 text")  # fmt: skip


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory"])
@pytest.mark.slow
def test_a_secret_file_that_is_no_regular_file_is_refused_unread(tmp_path: Path, kind: str) -> None:
    path, says = KINDS[kind](tmp_path)
    one_line(run_limited("attach", "ws://127.0.0.1:9/crawl", "--secret-file", path), says)


def test_a_lecture_over_its_cap_is_refused_before_a_byte_of_it_is_read(tmp_path: Path) -> None:
    # Issue 38 #33: a sparse 70 MiB file that starts as a lecture's recording. Read whole
    # it would cost 70 MiB (and then fail on its zeros with another message).
    path = sparse(tmp_path / "lecture.jsonl", 70 * MiB, LECTURE_START)
    for load in (load_lecture, load_recording):
        tracemalloc.start()
        try:
            with pytest.raises(ReplayError) as refused:
                load(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert str(refused.value) == (
            f"{path} is too big for a lecture recording (70 MiB, at most 64 MiB)"
        )
        assert peak < MiB, f"{load.__name__} took {peak:,} bytes to refuse it"


def test_a_crawl_recording_over_its_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = sparse(tmp_path / "crawl.jsonl", MAX_BYTES + MiB)
    tracemalloc.start()
    try:
        with pytest.raises(ReplayError, match="too big for a crawl recording"):
            load_recording(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MiB, f"took {peak:,} bytes to refuse it"
