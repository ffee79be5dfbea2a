"""Where a big page is parsed, decided on real pages: the Python documentation (Debian's
python3.11-doc, some 500 pages of up to 2.5 MB) served by nginx, crawled whole with each
policy in turn, each crawl a fresh process, the order swapped every round:

- inline: every page parsed on the loop, in the step that read its body;
- threads: a page of 256 KiB or more parsed in one of two threads (the GIL shared with
  the loop), the loop free meanwhile;
- threads-1mb: the same from 1 MiB.

(The engine's own policy, crawler.PARSE_IN_THREAD_BYTES, was decided from these.)

Printed side by side: each crawl's wall time, its pages/s, and the longest step that
held the loop (the loop-blocked warning's figure), medians over the rounds.

    python -m bench.big_pages [--rounds N] [--docs DIR]

Needs nginx and the docs: `apt-get install nginx-light python3.11-doc`. Not in
`python -m bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import child_figures, machine_line, median, parser, table, write_results

DOCS = Path("/usr/share/doc/python3.11/html")
POLICIES = {"inline": 1 << 40, "threads": 256 * 1024, "threads-1mb": 1 << 20}


def serve_with_nginx(root: Path, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """nginx serving `root` on a free port of 127.0.0.1, as a site's server would."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = workdir / "nginx.conf"
    config.write_text(
        f"daemon off; worker_processes 1; pid {workdir}/nginx.pid; error_log stderr;\n"
        "events { worker_connections 1024; }\n"
        f"http {{ access_log off; include /etc/nginx/mime.types; "
        f"client_body_temp_path {workdir}; proxy_temp_path {workdir}; "
        f"fastcgi_temp_path {workdir}; uwsgi_temp_path {workdir}; scgi_temp_path {workdir}; "
        f"server {{ listen 127.0.0.1:{port}; root {root}; }} }}\n"
    )
    proc = subprocess.Popen(["nginx", "-c", str(config), "-p", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    time.sleep(0.5)
    if proc.poll() is not None:
        raise RuntimeError("nginx did not start")
    return proc, f"http://127.0.0.1:{port}/"


async def crawl(root: str, threshold: int) -> dict[str, Any]:
    """One crawl with big pages parsed in threads from `threshold` bytes."""
    from crawlscope.engine import crawler as crawler_module
    from crawlscope.engine.config import CrawlConfig

    crawler_module.PARSE_IN_THREAD_BYTES = threshold
    crawler = crawler_module.Crawler(CrawlConfig(roots=(root,)))
    t0 = time.perf_counter()
    await crawler.crawl()
    seconds = time.perf_counter() - t0
    _p50, _p99, holds = crawler.health.figures()  # the longest steps of the last minute
    return {"seconds": seconds, "pages": len(crawler.ledger.done),
            "longest_hold_s": max((hold.seconds for hold in holds), default=0.0)}  # fmt: skip


def one(root: str, policy: str) -> dict[str, Any]:
    return child_figures("bench.big_pages", "--child", policy, root)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, help="default 5; quick 1")
    p.add_argument("--docs", type=Path, default=DOCS, help=f"the pages to serve (default {DOCS})")
    p.add_argument("--child", nargs=2, metavar=("POLICY", "ROOT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        policy, root = args.child
        print(json.dumps(asyncio.run(crawl(root, POLICIES[policy]))))
        return 0
    if shutil.which("nginx") is None or not (args.docs / "index.html").exists():
        print("needs nginx and the Python docs: apt-get install nginx-light python3.11-doc")
        return 1
    rounds = args.rounds or (1 if args.quick else 5)
    big = sorted((f.stat().st_size for f in args.docs.rglob("*.html")), reverse=True)
    print(machine_line())
    print(
        f"{len(big)} pages, the biggest {big[0] / 1e6:.1f} MB, "
        f"{sum(s >= POLICIES['threads'] for s in big)} of 256 KiB or more"
    )
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        nginx, root = serve_with_nginx(args.docs, Path(tmp))
        try:
            for r in range(rounds):
                for policy in list(POLICIES) if r % 2 == 0 else list(POLICIES)[::-1]:
                    got = one(root, policy)
                    rows.append({"round": r, "policy": policy, **got})
                    print(f"round {r + 1} {policy}: {got['seconds']:.2f} s, {got['pages']} "
                          f"pages, longest hold {got['longest_hold_s'] * 1000:.0f} ms",
                          flush=True)  # fmt: skip
        finally:
            nginx.terminate()
            nginx.wait()
    summary = {
        policy: {
            "seconds": median(r["seconds"] for r in rows if r["policy"] == policy),
            "pages_per_s": median(r["pages"] / r["seconds"] for r in rows if r["policy"] == policy),
            "longest_hold_ms": median(
                r["longest_hold_s"] * 1000 for r in rows if r["policy"] == policy
            ),
        }
        for policy in POLICIES
    }
    print(table(
        ("policy", "crawl s (median)", "pages/s", "longest hold ms"),
        [(policy, round(s["seconds"], 2), round(s["pages_per_s"]), round(s["longest_hold_ms"]))
         for policy, s in summary.items()],
    ))  # fmt: skip
    write_results("big_pages", args, {"rows": rows, "summary": summary, "cpus": os.cpu_count()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
