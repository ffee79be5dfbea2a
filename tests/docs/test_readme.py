"""The README is the front door: one page, the two commands first, the one picture the
screen draws today."""

from __future__ import annotations

import html
import re

from docs_support import ROOT

from crawlscope.tui.keys import COMMON, STEERING

README = ROOT / "README.md"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)\n```", text, re.M | re.S)


def test_the_readme_is_one_page_and_starts_with_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    run, test = code_blocks(text)[:2]
    assert text.index(run) < text.index("## ")  # before any section
    assert run.endswith("pip install . && crawlscope")
    assert test.endswith("pip install -e '.[test]' && python -m pytest -q -n 2")
    # CI runs the README's test command word for word.
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == test.rpartition(" && ")[2]


def test_the_screenshots_folder_holds_the_readmes_pictures_only() -> None:
    # The docs' pictures are made as the site is built; only the README's is kept.
    shown = set(re.findall(r"\]\((screenshots/[^)]+)\)", README.read_text()))
    kept = {f"screenshots/{path.name}" for path in (ROOT / "screenshots").iterdir()}
    assert shown == kept == {"screenshots/overview.svg"}


def test_the_readmes_picture_has_todays_footer() -> None:
    # The footer is the screen's every key: a key renamed, added or dropped since the
    # picture was made shows here. Make it again with
    # `python -m crawlscope.tui.screenshots screenshots overview.svg`.
    svg = (ROOT / "screenshots" / "overview.svg").read_text()
    cells = [
        html.unescape(t).replace("\xa0", " ").strip() for t in re.findall(r">([^<]*)</text>", svg)
    ]
    start = cells.index("Pause") - 1  # the footer's first key, "p"
    first: dict[str, tuple[str, str]] = {}
    for key in (*STEERING, *COMMON):
        if key.show:
            first.setdefault(key.keys, (key.display or key.keys, key.label))
    expected = [word for pair in first.values() for word in pair]
    drawn = [cell for cell in cells[start:] if cell][: len(expected)]
    assert drawn == expected
