"""What ``migrate`` prints: one JSON object per run, or a table with a line per repository."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from torchfix_codemods.migrate.model import MigrateOptions, RepoOutcome, SuiteOutcome
from torchfix_codemods.report.console import rich_console
from torchfix_codemods.report.json import SCHEMA_VERSION, finding_to_dict


def _tests_dict(outcome: SuiteOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {"passed": outcome.passed, "returncode": outcome.returncode,
            "seconds": outcome.seconds, "failed": list(outcome.failed), "output": outcome.tail,
            "read_from": outcome.reader, "tests": outcome.tests}


def repository_dict(outcome: RepoOutcome, options: MigrateOptions) -> dict[str, Any]:
    return {
        "path": outcome.path,
        "branch": outcome.branch,
        "base": outcome.base,
        "commits": [{"sha": c.sha, "code": c.label, "codes": list(c.codes), "subject": c.subject,
                     "files": c.files, "fixes": c.fixes, "safety": c.safety, "new": c.new}
                    for c in outcome.commits],
        "dropped": [{"code": d.label, "codes": list(d.codes), "subject": d.subject,
                     "reason": d.reason, "output": d.tail} for d in outcome.dropped],
        "remaining": [finding_to_dict(f) for f in outcome.remaining],
        "tests": None if options.test_cmd is None else {
            "command": options.test_cmd,
            "before": _tests_dict(outcome.tests_before),
            "after": _tests_dict(outcome.tests_after),
            "versions": outcome.test_versions,
            "untested": outcome.untested,
            "reused_runs": outcome.tests_reused,
        },
        "differs_from_single_run": [
            {"path": p, "keyword_order_only": p in outcome.keyword_order_only}
            for p in outcome.differs_from_single_run],
        "notes": outcome.notes,
        "pr_body": outcome.pr_body,
        "pr_body_path": outcome.pr_body_path,
        "pushed": outcome.pushed,
        "pr_url": outcome.pr_url,
        "pr_command": outcome.pr_command,
        "error": outcome.error,
    }


def summary_dict(outcomes: list[RepoOutcome]) -> dict[str, int]:
    return {
        "repositories": len(outcomes),
        "migrated": sum(1 for o in outcomes if o.commits and o.error is None),
        "new_commits": sum(len(o.new_commits) for o in outcomes),
        "fixes": sum(o.fixes for o in outcomes),
        "dropped": sum(len(o.dropped) for o in outcomes),
        "remaining": sum(len(o.remaining) for o in outcomes),
        "pushed": sum(1 for o in outcomes if o.pushed),
        "pull_requests": sum(1 for o in outcomes if o.pr_url),
        "errors": sum(1 for o in outcomes if o.error),
    }


def render_json(outcomes: list[RepoOutcome], options: MigrateOptions) -> str:
    return json.dumps({"version": SCHEMA_VERSION,
                       "repositories": [repository_dict(o, options) for o in outcomes],
                       "summary": summary_dict(outcomes)}, indent=2)


def _tests_cell(outcome: RepoOutcome, options: MigrateOptions) -> str:
    if options.test_cmd is None:
        return "-"
    before = outcome.tests_before
    after = outcome.tests_after
    word = {True: "pass", False: "fail", None: "-"}
    return (f"{word[before.passed if before else None]} -> "
            f"{word[after.passed if after else None]}")


def render_table(console: Console, outcomes: list[RepoOutcome], options: MigrateOptions) -> None:
    """A line per repository, then what to do next with each branch."""
    # One --branch for the whole run: said once above the table, not in a column.
    table = Table(box=None, pad_edge=False, title=f"branch {escape(options.branch)}",
                  title_justify="left")
    for column in ("repository", "commits", "fixes", "dropped", "left", "tests", "pushed"):
        table.add_column(column, no_wrap=True, overflow="ellipsis")
    for o in outcomes:
        commits = f"{len(o.commits)}" + (f" ({len(o.new_commits)} new)"
                                         if len(o.new_commits) != len(o.commits) else "")
        table.add_row(escape(o.path), commits, str(o.fixes), str(len(o.dropped)),
                      str(len(o.remaining)), _tests_cell(o, options), "yes" if o.pushed else "no")
    # Piped output is 80 columns by default: let the table be as wide as its content.
    width = Measurement.get(console, console.options.update_width(1000), table).maximum
    if width > console.width and not console.is_terminal:
        rich_console(file=console.file, width=width).print(table)
    else:
        console.print(table)
    for o in outcomes:
        lines = []
        if o.error:
            lines.append(f"error: {o.error}")
        for dropped in o.dropped:
            lines.append(f"dropped {dropped.label}: {dropped.reason}")
        lines += o.notes
        different = [p for p in o.differs_from_single_run if p not in o.keyword_order_only]
        if different:
            lines.append("differs from one `fix` run in: " + ", ".join(different))
        if o.pr_body_path:
            lines.append(f"PR body: {o.pr_body_path}")
        if o.pr_url:
            lines.append(f"pull request: {o.pr_url}")
        if o.pr_command:
            lines.append(f"open the pull request with: {o.pr_command}")
        for line in lines:
            first, *rest = line.splitlines() or [""]
            # A multi-line message (git's whole reason for a rejected push) stays whole,
            # its continuation lines indented under the first.
            console.print(f"{escape(o.path)}: {escape(first)}", highlight=False, soft_wrap=True)
            for more in rest:
                console.print(f"    {escape(more)}", highlight=False, soft_wrap=True)
