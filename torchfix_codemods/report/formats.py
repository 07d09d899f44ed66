"""The output formats of ``check`` and ``fix``: one table, format name -> emitter.

Everything else that names the formats is derived from :data:`EMITTERS`: the
``format`` setting's validation and the ``--format`` help
(:data:`torchfix_codemods.settings.OUTPUT_FORMATS`) and the dispatch in
:func:`torchfix_codemods.commands.emit`. A new format is one entry here.

The settings import this module on every start, so it imports no report, no rule
and no rich at module level: each emitter imports its renderer when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchfix_codemods.findings import FileResult
    from torchfix_codemods.report.sarif import RuleInfo

Emitter = Callable[..., None]
"""``emitter(out, results, *, fixing, unsafe_fixes, show_fixes, quiet)``: writes to ``out``."""


def _text(out: Any, results: list[FileResult], *, fixing: bool, unsafe_fixes: bool,
          show_fixes: bool, quiet: bool) -> None:
    from torchfix_codemods.report.text import render_text

    if fixing and show_fixes:
        from torchfix_codemods.report.statistics import render_fixes

        render_fixes(out, results, dry_run=False)
    render_text(out, results, fixing=fixing, unsafe_fixes=unsafe_fixes,
                show_fixes=show_fixes and not fixing, quiet=quiet)


def _json(out: Any, results: list[FileResult], **_: bool) -> None:
    from torchfix_codemods.report.json import render_json

    out.file.write(render_json(results) + "\n")


def _github(out: Any, results: list[FileResult], **_: bool) -> None:
    from torchfix_codemods.report.github import render_github

    text = render_github(results)
    if text:
        out.file.write(text + "\n")


def rule_infos() -> list[RuleInfo]:
    """Every rule as SARIF describes it (its ``tool.driver.rules``)."""
    from torchfix_codemods.report.sarif import RuleInfo
    from torchfix_codemods.rules.registry import all_rules

    return [RuleInfo(r.code, r.name, r.message, r.documentation(), r.safety.value)
            for r in all_rules()]


def _sarif(out: Any, results: list[FileResult], **_: bool) -> None:
    from torchfix_codemods.report.sarif import render_sarif

    out.file.write(render_sarif(results, rule_infos()) + "\n")


def _gitlab(out: Any, results: list[FileResult], **_: bool) -> None:
    from torchfix_codemods.report.gitlab import render_gitlab

    out.file.write(render_gitlab(results) + "\n")


def _junit(out: Any, results: list[FileResult], **_: bool) -> None:
    from torchfix_codemods.report.junit import render_junit

    out.file.write(render_junit(results) + "\n")


EMITTERS: dict[str, Emitter] = {
    "text": _text, "json": _json, "github": _github, "sarif": _sarif, "gitlab": _gitlab,
    "junit": _junit,
}
"""Format name -> emitter, in the order the help and error messages list them."""
