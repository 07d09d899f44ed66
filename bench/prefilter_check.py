"""How many files the prefilter keeps from LibCST, and proof on real code that it changes nothing
(from speed).

For each directory: how many files mention an active rule's trigger (the
substring stage) and how many of those the ast stage still sends to LibCST.
With ``--compare``, every file is also checked with and without the ast stage
(all rules, ``check``) and any difference in findings is printed; the exit
status is 1 when there is one.

Usage::

    python bench/prefilter_check.py /tmp/tfc-bench/*            # counts only
    python bench/prefilter_check.py --compare /tmp/tfc-bench/*  # and the proof (minutes)
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from torchfix_codemods import engine
from torchfix_codemods.catalog import SYNTAX_ERROR_CODE
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.discovery import discover
from torchfix_codemods.prefilter import could_match
from torchfix_codemods.rules.registry import all_rules
from torchfix_codemods.runner import Mode, run_paths
from torchfix_codemods.settings import Overrides
from torchfix_codemods.source import load_source


def _findings(files: list[str], configuration: Configuration,
              use_ast: bool) -> dict[str, list[tuple]]:
    engine.USE_AST_PREFILTER = use_ast  # forked workers inherit it
    results = run_paths(files, configuration, Mode.CHECK, show_progress=False)
    return {r.path: sorted(dataclasses.astuple(f) for f in r.findings) for r in results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directories", nargs="+", type=Path)
    parser.add_argument("--compare", action="store_true",
                        help="also check every file with and without the ast stage")
    args = parser.parse_args(argv)
    rules = [rule for rule in all_rules() if rule.code != SYNTAX_ERROR_CODE]
    overrides = Overrides(select=("ALL",), extend_select=("TFC410",), cache=False)
    print(f"{'directory':<40}{'files':>7}{'substring':>11}{'ast':>7}{'ast ms/file':>13}")
    totals = [0, 0, 0]
    differences = 0
    for directory in args.directories:
        configuration = Configuration(overrides)
        files = discover([str(directory)], configuration)
        substring = kept = 0
        ast_seconds = 0.0
        for path in files:
            try:
                text = load_source(path, Path(path).read_bytes()).text
            except Exception:  # noqa: BLE001 - unreadable files are not the question here
                continue
            if could_match(rules, text, use_ast=False).rules:
                substring += 1
                started = time.perf_counter()
                kept += bool(could_match(rules, text).rules)
                ast_seconds += time.perf_counter() - started
        per_file = 1000 * ast_seconds / substring if substring else 0.0
        print(f"{str(directory)[-40:]:<40}{len(files):>7}{substring:>11}{kept:>7}{per_file:>13.2f}")
        for index, count in enumerate((len(files), substring, kept)):
            totals[index] += count
        if args.compare:
            with_ast = _findings(files, configuration, True)
            without = _findings(files, configuration, False)
            for path in files:
                if with_ast.get(path) != without.get(path):
                    differences += 1
                    print(f"  DIFFERENT: {path}")
    print(f"{'total':<40}{totals[0]:>7}{totals[1]:>11}{totals[2]:>7}")
    if args.compare:
        print(f"files whose findings differ with the ast stage: {differences}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
