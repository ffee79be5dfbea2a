"""What a --procs parent reads from its children is checked line by line: a real process
writes good records, garbage, a line far past the cap and half a line, and the parent
keeps exactly the good records and counts the rest."""

from __future__ import annotations

import asyncio
import json
import sys

from crawlscope.engine.cluster.local import RECORD_LIMIT, Child, LocalCluster
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.records import FetchRecord


def record(n: int) -> str:
    return FetchRecord(
        f"http://127.0.0.1:1/page/{n}", 200, None, None, 10, "text/html", "utf-8", 1, 1, 1,
        1, None, 0, 1.0, 2.0,
    ).to_json()  # fmt: skip


WRITER = """
import sys
out = sys.stdout.buffer
lines = sys.argv[1:]
out.write((lines[0] + "\\n").encode())
out.write(b"not a record\\n")
out.write(b'{"url": "http://127.0.0.1:1/x"' + b" " * (2 * LIMIT) + b"}\\n")  # too long
out.write((lines[1] + "\\n").encode())
for i in range(3000):  # many records, split across the pipe's chunks anywhere
    out.write((lines[2].replace("/page/2", f"/page/{i + 10}") + "\\n").encode())
out.write(lines[0][:40].encode())  # half a line: the writer died mid-record
"""


async def read_from(script: str, *args: str) -> LocalCluster:
    cluster = LocalCluster(CrawlConfig(roots=("http://127.0.0.1:1/",)), 1)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, *args, stdout=asyncio.subprocess.PIPE
    )
    child = Child(0, proc)
    await cluster._read(child)
    await proc.wait()
    assert child.records == len(cluster.ledger.done)
    return cluster


async def test_the_parent_keeps_the_records_and_counts_the_rest() -> None:
    script = WRITER.replace("LIMIT", str(RECORD_LIMIT))
    cluster = await read_from(script, record(0), record(1), record(2))
    done = cluster.ledger.done
    assert len(done) == 2 + 3000
    assert "http://127.0.0.1:1/page/0" in done and "http://127.0.0.1:1/page/3009" in done
    assert cluster.bad_lines == 3  # garbage, the overlong line, the half line
    assert json.loads(record(1))["url"] in done
