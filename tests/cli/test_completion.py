"""`crawlscope completion SHELL`: a completion script made by shtab from the parser
itself, so every command and option completes, new ones included."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from helpers import run_cli

# What marks each shell's script, and the command that checks its syntax without running it.
SHELLS = {
    "bash": ("-F _shtab_crawlscope crawlscope", ["bash", "-n"]),
    "zsh": ("#compdef crawlscope", ["zsh", "-n"]),
    "fish": ("complete -c crawlscope", ["fish", "--no-execute"]),
}


@pytest.mark.parametrize("shell", list(SHELLS))
def test_a_completion_script_is_made_for_each_shell(shell: str) -> None:
    result = run_cli("completion", shell)
    assert result.returncode == 0, result.stderr
    script = result.stdout
    marker, check = SHELLS[shell]
    assert marker in script
    for command in ("crawl", "demo-site", "replay", "completion"):
        assert command in script, command
    for option in ("max-tasks", "sitemaps", "config", "report"):
        spelled = f"-l {option}" if shell == "fish" else f"--{option}"
        assert spelled in script, spelled
    if shutil.which(check[0]) is None:
        return  # the shell itself is not installed here: its syntax cannot be checked
    checked = subprocess.run([*check], input=script, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr


def test_an_unknown_shell_is_refused() -> None:
    result = run_cli("completion", "tcsh")
    assert result.returncode == 2
    assert "invalid choice: 'tcsh'" in result.stderr
