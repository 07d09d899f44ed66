"""The pull-request body: what each commit changed and how safe it is, what is left, the tests.

Markdown for GitHub (and anything else that renders it). Links to files and
lines point at the branch's last commit when the remote is on GitHub; other
remotes get plain ``path:line``. The body stays under GitHub's 65,536
characters by listing at most :data:`MAX_CHECKLIST` findings.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter

from torchfix_codemods import __version__
from torchfix_codemods.catalog import SYNTAX_ERROR_CODE
from torchfix_codemods.findings import Finding, Safety
from torchfix_codemods.migrate.commits import counted
from torchfix_codemods.migrate.model import (
    JUNIT,
    CommitRecord,
    MigrateOptions,
    RepoOutcome,
    SuiteOutcome,
)
from torchfix_codemods.rules.registry import rule_by_code

MAX_CHECKLIST = 150
_GITHUB = re.compile(r"^(?:https://|ssh://git@|git@)github\.com[:/]([^/]+)/(.+?)(?:\.git)?/?$")


def github_blob_base(remote_url: str | None, sha: str) -> str | None:
    """``https://github.com/owner/repo/blob/<sha>/`` for a GitHub remote, else None."""
    match = _GITHUB.match(remote_url or "")
    if match is None:
        return None
    return f"https://github.com/{match.group(1)}/{match.group(2)}/blob/{sha}/"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _safety(counts: dict[str, int]) -> str:
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{level} ({count})" for level, count in sorted(counts.items()))


def _location(finding: Finding, link_base: str | None) -> str:
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    text = f"`{finding.path}:{cell}{finding.line}`"
    if link_base is None:
        return text
    anchor = "" if finding.cell is not None else f"#L{finding.line}"
    return f"[{text}]({link_base}{finding.path}{anchor})"


_LAUNCH_CLAUSE = re.compile(r"launch with `torchrun[^`]*` \(plain `python` still runs one "
                            r"process\); ?")
"""TFC301's per-file launch line: the launch section says it once, for scripts only (a
library module or a test file is not what one starts with torchrun)."""


def _what(commit: CommitRecord) -> str:
    """``add `weights_only=True``` or, with several, ``desc (3 safe, 4 unsafe); other (1)``."""
    by_description: dict[str, Counter[str]] = {}
    for change in commit.changes:
        description = _LAUNCH_CLAUSE.sub("", change.description)
        by_description.setdefault(description, Counter())[change.safety] += change.count
    if len(by_description) == 1 and len(commit.safety) == 1:
        return next(iter(by_description))
    mixed = len(commit.safety) > 1
    parts = []
    for description, counts in by_description.items():
        detail = (", ".join(f"{n} {level}" for level, n in sorted(counts.items())) if mixed
                  else str(sum(counts.values())))
        parts.append(f"{description} ({detail})")
    return "; ".join(parts)


def _commit_table(outcome: RepoOutcome) -> list[str]:
    lines = ["| Rule | What it changed | Fix safety | Files | Fixes |", "|---|---|---|---|---|"]
    for commit in outcome.commits:
        names = ", ".join(f"{code} `{rule_by_code(code).name}`" for code in commit.codes)
        what = _what(commit) or commit.subject
        lines.append(f"| {_cell(names)} | {_cell(what)} | {_safety(commit.safety)} | "
                     f"{commit.files} | {commit.fixes} |")
    return lines


INFORMATIONAL = "no migration needed"
"""Words of a finding that asks for nothing (TFC301 on evaluation-only code): it is told
for information, not listed as work."""


def _not_analysed(findings: list[Finding]) -> list[str]:
    """Files the tool could not parse: named once each, as files nothing was checked in
    (for a notebook, often IPython syntax such as ``x = !ls``), not as work to do."""
    paths = sorted({f.path for f in findings})
    notebooks = any(path.endswith(".ipynb") for path in paths)
    return ["### Not analysed", "",
            "The tool could not parse " + ", ".join(f"`{path}`" for path in paths)
            + ", so nothing in " + ("it" if len(paths) == 1 else "them") + " was checked or "
            "changed" + (" (in a notebook, a cell with IPython syntax the parser does not "
                         "read can be the cause; the code itself may be fine)" if notebooks
                         else "") + ".", ""]


def _checklist(outcome: RepoOutcome) -> list[str]:
    unparsed = [f for f in outcome.remaining if f.code == SYNTAX_ERROR_CODE]
    told = [f for f in outcome.remaining
            if f.code != SYNTAX_ERROR_CODE and INFORMATIONAL in f.message]
    findings = [f for f in outcome.remaining
                if f.code != SYNTAX_ERROR_CODE and INFORMATIONAL not in f.message]
    lines = _not_analysed(unparsed) if unparsed else []
    if told:
        lines += ["### For information (no change needed)", ""]
        lines += [f"- {_location(f, outcome.link_base)} {f.code} `{f.name}`: {f.message}"
                  for f in told]
        lines.append("")
    if not findings:
        return lines[:-1] if lines else lines
    lines += [f"### Left for a person ({len(findings)})", "",
              "The tool reports these and does not rewrite them (no fix, an unsafe fix this run "
              "did not apply, or a fix it withheld); `torchfix-codemods explain CODE` says why "
              "and what to do.", ""]
    for finding in findings[:MAX_CHECKLIST]:
        line = (f"- [ ] {_location(finding, outcome.link_base)} {finding.code} "
                f"`{finding.name}`: {finding.message}")
        if finding.fix is not None and finding.fix.withheld:
            line += f" (fix withheld: {finding.fix.withheld})"
        elif finding.fixable:
            line += (f" (unsafe fix with `--unsafe-fixes`: {finding.fix.description})"  # type: ignore[union-attr]
                     if finding.fix.safety is Safety.UNSAFE  # type: ignore[union-attr]
                     else f" (safe fix: {finding.fix.description})")  # type: ignore[union-attr]
        lines.append(line)
    if len(findings) > MAX_CHECKLIST:
        rest = Counter(f.code for f in findings[MAX_CHECKLIST:])
        lines.append(f"- and {len(findings) - MAX_CHECKLIST} more ("
                     + ", ".join(f"{code}: {count}" for code, count in sorted(rest.items()))
                     + "): run `torchfix-codemods check` to list them")
    return lines


MAX_TEST_IDS = 40


def _test_line(outcome: SuiteOutcome) -> str:
    count = f"{counted(outcome.tests, 'test', 'tests')}, " if outcome.tests is not None else ""
    if outcome.returncode is None:
        return f"stopped at the time limit ({outcome.seconds:g} s)"
    if outcome.passed:
        return f"passed ({count}{outcome.seconds:g} s)"
    failing = (f", {counted(len(outcome.failed), 'failing test', 'failing tests')}"
               if outcome.failed else "")
    return f"failed (exit status {outcome.returncode}{failing}; {count}{outcome.seconds:g} s)"


def _ids(title: str, ids: list[str]) -> list[str]:
    """A collapsed list of test ids, whole (spaces and parametrisation included)."""
    if not ids:
        return [f"- {title}: none"]
    shown = [f"  - `{_cell(test)}`" for test in ids[:MAX_TEST_IDS]]
    if len(ids) > MAX_TEST_IDS:
        shown.append(f"  - and {len(ids) - MAX_TEST_IDS} more")
    return [f"- {title} ({len(ids)}):", *shown]


def _how_read(before: SuiteOutcome) -> str:
    if before.reader == JUNIT:
        return ("Outcomes were read test by test from the JUnit XML report the tool asked "
                "pytest for (`--junitxml` through `PYTEST_ADDOPTS`), never from its text.")
    return ("Outcomes were read from the command's exit status alone: it wrote no JUnit XML "
            "report (it does not run pytest, or pytest did not get `PYTEST_ADDOPTS`).")


def _tests(outcome: RepoOutcome, options: MigrateOptions) -> list[str]:
    if options.test_cmd is None:
        return ["### Tests", "", "No test command was given (`--test-cmd`): run the "
                "repository's tests before merging."]
    before, after = outcome.tests_before, outcome.tests_after
    if before is None:
        return ["### Tests", "", f"`{options.test_cmd}` did not run: no commit was made."]
    if outcome.untested is None:
        lines = ["### Tests", "", f"`{options.test_cmd}` ran on the base and after each commit; "
                 "a commit whose run failed in a way the base did not (a new failing test, a "
                 "collection error, a time-out, a crash) was dropped. " + _how_read(before)]
    else:
        lines = ["### Tests", "", f"**The commits were not checked against the tests**: "
                 f"{outcome.untested}. `{options.test_cmd}` ran on the base"
                 + (" and on this branch." if after is not None else ".") + " "
                 + _how_read(before)]
    if outcome.test_versions:
        lines += ["", f"The tests ran on {outcome.test_versions}."]
    if outcome.tests_reused:
        lines += ["", f"{counted(outcome.tests_reused, 'test run was', 'test runs were')} read "
                  "back from an earlier `migrate` on the very same tree with the same command, "
                  "not run again."]
    lines += ["", f"- base `{(outcome.base or '')[:12]}`: {_test_line(before)}"]
    if after is not None:
        lines.append(f"- this branch: {_test_line(after)}")
    if after is not None and before.reader == JUNIT and (before.failed or after.failed):
        old, now = set(before.failed), set(after.failed)
        lines += ["", *_ids("failing on the base", sorted(old)),
                  *_ids("failing on this branch", sorted(now)),
                  *_ids("new on this branch", sorted(now - old)),
                  *_ids("passing again on this branch", sorted(old - now))]
    for dropped in outcome.dropped:
        lines += ["", f"**Dropped** {dropped.label} ({dropped.subject}): {dropped.reason}. "
                  "Its fixes are not on this branch.", "",
                  "<details><summary>test output (last lines)</summary>", "", "```text",
                  dropped.tail.replace("```", "` ` `"), "```", "", "</details>"]
    return lines


def _differences(outcome: RepoOutcome) -> list[str]:
    """Where the branch's text is not what one ``fix`` run over the base gives, and why."""
    order_only = outcome.keyword_order_only
    other = [p for p in outcome.differs_from_single_run if p not in order_only]
    if not outcome.differs_from_single_run:
        return []
    lines = ["", "### Compared with one `fix` run", ""]
    if order_only:
        lines.append("In " + ", ".join(f"`{p}`" for p in order_only) + " two rules added "
                     "keyword arguments to the same call, one commit after the other, so they "
                     "appear in another order than one `torchfix-codemods fix` run writes them; "
                     "the calls are the same (checked on the syntax tree).")
    if other:
        lines.append(("" if not order_only else "\n") + "In " + ", ".join(
            f"`{p}`" for p in other) + " applying the rules one commit at a time gave a "
            "different program than one `torchfix-codemods fix` run (fixes of different rules "
            "interact there): review these files with care.")
    return lines


def _files(paths: set[str]) -> str:
    return ", ".join(f"`{p}`" for p in sorted(paths))


def _style(outcome: RepoOutcome) -> list[str]:
    """What ran of the repository's own import sorter and formatter, and where."""
    style = outcome.style
    if style is None or not (style.tools or style.missing):
        return []
    lines = ["", "### The repository's style", ""]
    lines += [f"- `{name}` (the repository's configuration) on the changed files: "
              f"{_files(files)}" for name, files in sorted(style.ran.items())]
    lines += [f"- `{t.name}` ran on {_files(style.checked[t.name])} and found nothing to change."
              for t in style.tools if t.name in style.checked and t.name not in style.ran]
    for name, files in sorted(style.skipped.items()):
        lines.append(f"- `{name}` not run on {_files(files)}: not clean by it on the base, so "
                     "the tool would change lines this branch did not touch.")
    if style.missing:
        lines.append("- Configured but not installed where this ran, so not run: "
                     + ", ".join(f"`{name}`" for name in style.missing) + ".")
    return lines


def render(outcome: RepoOutcome, options: MigrateOptions) -> str:
    """The whole PR body for one repository."""
    unit = {"rule": "rule", "family": "rule family", "all": "run"}[options.commit_per]
    parts = ["## PyTorch fixes by torchfix-codemods", "",
             f"{counted(outcome.fixes, 'fix', 'fixes')} in "
             f"{counted(len(outcome.commits), 'commit', 'commits')}, one per {unit}, so each "
             "can be reviewed or reverted on its own. Before writing a file, the tool checked "
             "that it still parses and compiles and reads no name it did not define.", ""]
    parts += _commit_table(outcome)
    if any(c.safety.get("unsafe") for c in outcome.commits):
        parts += ["", "**Unsafe** fixes change behaviour on purpose (for example `model.eval()` "
                  "changes outputs) or are right only under conditions the tool cannot prove: "
                  "review those commits first."]
    scripts = sorted({path for c in outcome.commits for path in c.launch})
    imported = sorted({path for c in outcome.commits for path in c.imported})
    if scripts or imported:
        parts += ["", "### Launching after the DistributedDataParallel migration (TFC301)", ""]
    if scripts:
        parts += ["One process per GPU now; start the migrated scripts with `torchrun` "
                  "(`python script.py` still runs one process):", "", "```bash"]
        parts += [f"torchrun --nproc_per_node=N {path}" for path in scripts]
        parts += ["```"]
    if imported:
        parts += [("" if not scripts else "\n") + ", ".join(f"`{p}`" for p in imported)
                  + (" is a module, not run on its own" if len(imported) == 1
                     else " are modules, not run on their own")
                  + ": start the scripts that train with "
                  + ("it" if len(imported) == 1 else "them")
                  + " with `torchrun --nproc_per_node=N script.py` (one process per GPU)."]
    parts += _differences(outcome)
    parts += _style(outcome)
    if outcome.notes:
        parts += ["", "### Notes", ""] + [f"- {note}" for note in outcome.notes]
    parts += [""] + _checklist(outcome) if outcome.remaining else []
    parts += [""] + _tests(outcome, options)
    parts += ["", "### Reproduce", "", f"With torchfix-codemods {__version__}, at the "
              f"repository's root, on the base commit `{outcome.base}`:", "", "```bash",
              f"{options.reproduce} {shlex.quote(outcome.scope)}", "```", ""]
    return "\n".join(parts)
