"""`crawlscope serve`'s command line; the serving itself (textual-serve) is tui/serve.py,
imported only when the command runs. The crawl served is a plan like `crawl`'s and
`tui`'s (crawl_plan.py), with the same options."""

from __future__ import annotations

import argparse

from crawlscope.engine.sites.demo_config import DEMO_FOR_THE_EYE

from .common import fail
from .crawl_plan import (
    add_plan_options,
    crawl_only_refusal,
    looked_before_drawing,
    monitor_spot,
    plan_from_args,
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve",
        help="one crawl, watched in any number of browsers (for a lecture)",
        description="Crawl ROOT... (no ROOT: the built-in demo site), or play a recording "
        "with --replay, and serve the TUI to browsers at http://HOST:PORT/: every browser "
        "watches this one crawl. The `serving:` URL is read-only, for the class; the "
        "`lecturer:` URL steers; the `monitor:` URL is for `crawlscope attach`. With "
        "--redis and --crawl-id the browsers watch that whole cluster crawl, which this "
        "process joins when given ROOT... (and only watches when not). Ctrl-C stops it.",
    )
    serve.add_argument("roots", nargs="*", metavar="ROOT", help="URL to start from")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to serve on (default 127.0.0.1: this machine only; "
                       "0.0.0.0 lets the class's laptops in)")  # fmt: skip
    serve.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0: any)")
    serve.add_argument("--replay", metavar="FILE", help="play this recording instead of crawling")
    add_plan_options(serve, demo=DEMO_FOR_THE_EYE)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be from 0 to 65535, not {port}")
    return port


def main(args: argparse.Namespace) -> int:
    from crawlscope.engine.plan import PlanError
    from crawlscope.engine.remote.monitor import listen
    from crawlscope.engine.trace.replay import ReplayedCrawl, ReplayError

    plan = replay = spot = None
    try:
        if args.replay is not None:
            _refuse_crawl_options(args, "--replay plays a recording")
            if args.redis is not None:
                raise PlanError("--replay plays a recording: --redis needs a crawl in this process")
            replay = ReplayedCrawl.load(args.replay)
            spot = monitor_spot(args, "serve")
        elif args.redis is not None and not args.roots:
            if args.crawl_id is None:
                raise PlanError("--redis and --crawl-id go together")
            _refuse_crawl_options(args, "--redis with no ROOT only watches the cluster crawl")
        else:
            plan = plan_from_args(args, "serve", DEMO_FOR_THE_EYE)
            stop = looked_before_drawing(plan)
            if stop is not None:
                return stop
        sock = listen(args.host, args.port)
    except (PlanError, ReplayError) as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    from crawlscope.tui import serve

    if replay is not None:
        assert spot is not None
        return serve.serve_replay(sock, replay, spot)
    if args.redis is not None:
        # The browsers watch the whole cluster crawl; with a plan, this process is in it.
        return serve.serve_cluster(sock, args.redis, args.crawl_id, plan, args.report)
    assert plan is not None
    return serve.serve_crawl(sock, plan, args.report)


def _refuse_crawl_options(args: argparse.Namespace, why: str) -> None:
    from crawlscope.engine.plan import PlanError

    refusal = crawl_only_refusal(args, why)
    if refusal is not None:
        raise PlanError(refusal)
