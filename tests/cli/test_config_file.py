"""--config FILE and ./crawlscope.toml: the long options as keys, the command line wins,
a bad key or value is one line naming the key and the file."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlscope.cli import build_parser, main
from crawlscope.cli.options import (
    ConfigFileError,
    config_keys,
    parse_command_line,
    subcommands,
)
from helpers import demo_site_process


@pytest.fixture(scope="module")
def demo_site() -> Iterator[str]:
    with demo_site_process() as url:
        yield url


def parse(argv: list[str], cwd: Path) -> argparse.Namespace:
    return parse_command_line(build_parser(), argv, cwd=cwd)


def test_crawlscope_toml_in_the_working_directory_is_read(tmp_path: Path) -> None:
    (tmp_path / "crawlscope.toml").write_text(
        'max-tasks = 3\nmax-size = "512KiB"\ntimeout = 2.5\nlenient = true\n'
        'exclude = ["/private/", "[.]pdf$"]\nignore-robots = true\nuser-agent = "bot/1"\n'
    )
    args = parse(["crawl", "http://example.com/"], tmp_path)
    assert (args.max_tasks, args.max_size, args.total_timeout) == (3, 512 * 1024, 2.5)
    assert args.strict is False
    assert args.exclude == ["/private/", "[.]pdf$"]
    assert args.obey_robots is False
    assert args.user_agent == "bot/1"


def test_the_command_line_wins(tmp_path: Path) -> None:
    (tmp_path / "crawlscope.toml").write_text('max-tasks = 3\noutput = ["a.jsonl", "b.csv"]\n')
    args = parse(["crawl", "--max-tasks", "5", "-o", "c.json", "http://example.com/"], tmp_path)
    assert args.max_tasks == 5
    assert args.output == ["c.json"]  # a repeatable option given replaces the file's list
    args = parse(["crawl", "http://example.com/"], tmp_path)
    assert args.output == ["a.jsonl", "b.csv"]


def test_config_names_a_file_and_the_chapters_spelling_works(tmp_path: Path) -> None:
    given = tmp_path / "mine.toml"
    given.write_text("max_tasks = 7\n")
    (tmp_path / "crawlscope.toml").write_text("max-tasks = 3\n")
    args = parse(["crawl", "--config", str(given), "http://example.com/"], tmp_path)
    assert args.max_tasks == 7


def test_a_key_only_another_command_has_is_left_to_it(tmp_path: Path) -> None:
    (tmp_path / "crawlscope.toml").write_text("max-tasks = 4\nverbose = true\nfps = 5\n")
    assert parse(["tui"], tmp_path).fps == 5
    assert parse(["tui"], tmp_path).max_tasks == 4
    assert parse(["crawl", "http://example.com/"], tmp_path).verbose is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus = 1\n", "crawlscope.toml: unknown key 'bogus'"),
        ("max-tasks = -3\n", "crawlscope.toml: max-tasks: must be at least 1, not -3"),
        ("max-tasks = true\n", "crawlscope.toml: max-tasks: expected a value like N"),
        ('engine = "threads"\n', "crawlscope.toml: engine: must be one of callbacks"),
        ('verbose = "yes"\n', "crawlscope.toml: verbose: expected true or false"),
        ("max-tasks = \n", "crawlscope.toml: not valid TOML: "),
        ("help = true\n", "crawlscope.toml: unknown key 'help'"),
    ],
)
def test_a_bad_key_or_value_is_one_line_naming_both(
    tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "crawlscope.toml").write_text(text)
    with pytest.raises(ConfigFileError) as error:
        parse(["crawl", "http://example.com/"], tmp_path)
    assert str(error.value).startswith(str(tmp_path / message.split(":")[0]) + ":")
    assert message.split(": ", 1)[1] in str(error.value)
    assert "\n" not in str(error.value)


def test_every_long_option_of_every_command_is_a_key() -> None:
    """Generic by the parser's own actions: an option added later is a key at once."""
    parser = build_parser()
    for name, command in subcommands(parser).items():
        keys = config_keys(command)
        for action in command._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag not in ("--help", "--config"):
                    assert flag[2:] in keys, (name, flag)
    crawl = subcommands(parser)["crawl"]
    crawl.add_argument("--brand-new", type=int, default=0)
    assert "brand-new" in config_keys(crawl)


def test_the_command_reads_it_and_says_a_bad_one_in_one_line(
    demo_site: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out.csv"
    (tmp_path / "crawlscope.toml").write_text(f'max-pages = 4\nquiet = true\noutput = ["{out}"]\n')
    assert main(["crawl", demo_site]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) >= 5  # a header, 4 fetches
    (tmp_path / "crawlscope.toml").write_text("max-pages = -1\n")
    assert main(["crawl", demo_site]) == 2
    assert capsys.readouterr().err == (
        f"crawlscope: {tmp_path / 'crawlscope.toml'}: max-pages: must be at least 0, not -1\n"
    )
    assert main(["crawl", "--config", str(tmp_path / "none.toml"), demo_site]) == 2
    assert "cannot read " in capsys.readouterr().err
