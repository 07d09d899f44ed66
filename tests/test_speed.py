"""What keeps a warm ``check`` near the interpreter's start-up (no timing is asserted; from
speed).

* a ``check`` answered from the cache imports no LibCST, no rule, no engine, no
  rich (output piped), no typer/pydantic, and starts no process pool;
* the console script's own parser for ``check`` (entry.py) agrees with the
  typer command on every option it knows, and hands everything else to typer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from torchfix_codemods import cli, commands
from torchfix_codemods.entry import CHECK_OPTIONS, parse_check

SOURCE = "import torch\nstate = torch.load('m.pt')\n"
HEAVY = ("libcst", "torchfix_codemods.engine", "torchfix_codemods.rules.base", "typer",
         "pydantic", "rich", "concurrent.futures", "multiprocessing")

_PROBE = """
import json, sys
from torchfix_codemods.entry import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    code = done.code
sys.stderr.write("MODULES " + json.dumps({"code": code, "modules": sorted(sys.modules)}) + "\\n")
"""


def _probe(*args: str, cwd: Path) -> tuple[int, list[str], str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    report = json.loads(line[len("MODULES "):])
    return report["code"], report["modules"], done.stdout


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY))]


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_a_cached_check_imports_nothing_heavy(tmp_path: Path, output_format: str) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchfix-codemods]\n")
    for name in ("a.py", "b.py", "c.py", "d.py", "e.py", "f.py", "g.py", "h.py", "i.py"):
        (tmp_path / name).write_text(SOURCE + f"# {name}\n")
    args = ("check", "--format", output_format, ".")
    code, modules, cold = _probe(*args, cwd=tmp_path)
    assert code == 1 and "libcst" in modules  # the first run analyses
    code, modules, warm = _probe(*args, cwd=tmp_path)
    assert code == 1
    assert warm == cold
    assert _heavy(modules) == []
    assert not any(m.startswith("torchfix_codemods.rules") for m in modules)


def test_checking_an_empty_folder_imports_nothing_heavy(tmp_path: Path) -> None:
    code, modules, output = _probe("check", ".", cwd=tmp_path)
    assert code == 0 and "All checks passed (0 file(s))." in output
    assert _heavy(modules) == []


def _typer_arguments(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The keyword arguments typer's ``check`` passes on to ``check_command``."""
    seen: dict[str, object] = {}

    def record(*args: object, **keywords: object) -> int:
        names = ["paths", "select", "ignore", "extend_select", "output_format", "target_torch",
                 "jobs", "exclude", "extend_exclude", "config", "no_cache", "statistics",
                 "show_fixes", "exit_zero"]
        seen.update(zip(names, args, strict=True))
        seen.update(keywords)
        return 0

    monkeypatch.setattr(cli, "check_command", record)
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == 0, result.output
    defaults = {"paths": None, "no_cache": False, "statistics": False, "show_fixes": False,
                "exit_zero": False, "stdin_filename": None, "add_noqa": False,
                "force_exclude": False, "quiet": False, "output_file": None,
                "show_settings": None, "show_files": False}
    return {k: v for k, v in seen.items() if v != defaults.get(k)}


AGREED = [
    ["check"],
    ["check", "src", "tests/a.py"],
    ["check", "--select", "TFC001,TFC1", "--select", "TFC2", "src"],
    ["check", "--select=TFC001", "--ignore=TFC002", "--extend-select", "TFC410"],
    ["check", "--format", "json", "--format", "sarif", "."],
    ["check", "--target-torch", "2.4", "-j", "3", "--jobs", "2", "--no-cache"],
    ["check", "--exclude", "gen", "--extend-exclude", "*.pb.py", "--config", "x/pyproject.toml"],
    ["check", "a", "--no-cache", "b", "--jobs=4"],
    ["check", "--statistics", "--show-fixes", "--exit-zero", "."],
    ["check", "--force-exclude", "-q", "-o", "out.txt", "--config", "target-torch = '2.4'",
     "--config", "x/pyproject.toml", "a.py"],
    ["check", "-", "--stdin-filename", "src/a.py", "--quiet", "--output-file=r.json"],
]
DECLINED = [
    ["check", "--help"], ["check", "-h"], ["check", "-j4"], ["check", "--jobs", "0"],
    ["check", "--jobs", "x"], ["check", "--select"], ["check", "--select", "--ignore"],
    ["check", "--", "-odd.py"], ["check", "--no-cache=1"], ["check", "--bogus"],
    ["check", "-j=2"], ["fix", "."], ["--version"], [], ["rules"],
]


@pytest.mark.parametrize("argv", AGREED, ids=" ".join)
def test_the_fast_parser_passes_what_typer_passes(
        argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fast = parse_check(argv)
    assert fast is not None
    assert fast == _typer_arguments(argv, monkeypatch)


@pytest.mark.parametrize("argv", DECLINED, ids=" ".join)
def test_the_fast_parser_leaves_the_rest_to_typer(argv: list[str]) -> None:
    assert parse_check(argv) is None


def test_every_fast_option_is_an_option_of_typer_check_with_the_same_name() -> None:
    check = typer.main.get_command(cli.app).commands["check"]  # type: ignore[attr-defined]
    typer_options = {opt: param.name for param in check.params for opt in param.opts}
    for option, (name, _) in CHECK_OPTIONS.items():
        assert typer_options.get(option) == name, option
    parameters = set(commands.check_command.__code__.co_varnames[
        :commands.check_command.__code__.co_argcount])
    assert {param.name for param in check.params} == parameters


_UNCHECKED_SOURCES = [
    "import torch\nstate = torch.load('m.pt')  # trailing\n",
    "x = (a if not(b) else[c])\nlambda:0\n@d\nclass C(B, metaclass=M): pass\n",
    "async def f():\n    async with a as (b, c):\n        yield [i async for i in j]\n",
    "def f(a, /, b=1, *c, d, **e) -> 'T':\n    return f'{a!r:>{b}}' + r'\\n'\n",
]


@pytest.mark.parametrize("source", _UNCHECKED_SOURCES)
def test_the_unvalidated_parse_builds_the_same_tree(source: str) -> None:
    import libcst as cst

    from torchfix_codemods.engine import parse_unchecked

    unchecked = parse_unchecked(source)
    assert unchecked.deep_equals(cst.parse_module(source))
    assert unchecked.code == source


def test_the_unvalidated_parse_restores_validation_even_when_it_fails() -> None:
    import libcst as cst

    from torchfix_codemods.engine import parse_unchecked

    with pytest.raises(cst.ParserSyntaxError):
        parse_unchecked("def f(:\n")
    # Nodes built after it (a fix's) are validated again: a Name cannot be empty.
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
