"""One source unit: prefilter -> parse -> rules -> fixes -> validate.

The engine is where the never-break-code guarantees live, once for all rules:

* rules only see names through the shared :class:`NameIndex` (qualified names);
* fixes name imports through :class:`Imports` and the engine adds/removes them;
* rules offer fixes, the engine chooses: the first fix a finding offers that
  the run's policy allows (its safety tier, its torch release) is the one
  shown and applied;
* the rewritten text must compile and read no new undefined name, or the unit
  keeps its original text and every fix in it is reported as withheld;
* fixes are applied until none is left, so a second run changes nothing;
* an exception inside one rule becomes that rule's internal-error finding on
  this unit, and every other rule still reports;
* nothing is reported or rewritten inside code that exists to support older
  torch releases (:mod:`~torchfix_codemods.analysis.facts.compat`), whichever rule
  finds it.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from torchfix_codemods import attribution, legacy_syntax
from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.core.positions import positions_of
from torchfix_codemods.analysis.core.walk import children, children_memoized
from torchfix_codemods.analysis.facts.compat import guard_of
from torchfix_codemods.analysis.project import NO_PROJECT, ProjectFacts
from torchfix_codemods.analysis.project.stars import EVERY_NAME
from torchfix_codemods.budget import TooComplex, cpu_left, depth_problem
from torchfix_codemods.catalog import PARSE_CODES, SYNTAX_ERROR_CODE
from torchfix_codemods.edits.expressions import in_place_of
from torchfix_codemods.edits.import_statements import (
    add_module_imports,
    handles,
    remove_unused_imports,
)
from torchfix_codemods.edits.references import ImportRemoval, Imports
from torchfix_codemods.findings import FileResult, Finding, FixInfo, Safety
from torchfix_codemods.noqa import is_silenced, noqa_lines
from torchfix_codemods.options import FileOptions
from torchfix_codemods.prefilter import KNOWN_FACTS, Selection, could_match, known_facts
from torchfix_codemods.rules.base import Fix, NodeFinding, Rule, RuleContext
from torchfix_codemods.rules.registry import rule_by_code
from torchfix_codemods.source import SourceUnit, UndecodableSource, load_source
from torchfix_codemods.validation import check_rewrite, uncompilable

MAX_FIX_ROUNDS = 8
NOT_ROUND_TRIPPED = ("LibCST would not write this file back byte for byte (a form feed "
                     "before a statement?), so it is left untouched")
Located = tuple[NodeFinding, CodeRange]
"""A finding with the source range of its node, in the order of the file."""


@dataclass
class _Analysis:
    located: list[Located]
    names: NameIndex


class _BatchedVisitor:
    """Runs every active rule's ``visit_*``/``leave_*`` in one fast walk of the module.

    The walk is :func:`~torchfix_codemods.analysis.core.walk.walk`'s, inlined: handlers are
    looked up once per node type (not by the type's name at every node), and a node is
    revisited after its children only when a rule has a ``leave_*`` for its type (two
    types in practice): the handlers run in the same order as through ``walk``, at less
    than half the walk's own cost."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._visit: dict[str, list[tuple[Rule, Callable[[cst.CSTNode], object]]]] = {}
        self._leave: dict[str, list[tuple[Rule, Callable[[cst.CSTNode], object]]]] = {}
        for rule in rules:
            for attribute in dir(type(rule)):
                if attribute.startswith("visit_"):
                    table, node_type = self._visit, attribute[6:]
                elif attribute.startswith("leave_"):
                    table, node_type = self._leave, attribute[6:]
                else:
                    continue
                table.setdefault(node_type, []).append((rule, getattr(rule, attribute)))
        self.failed: dict[int, tuple[Rule, cst.CSTNode, BaseException]] = {}

    def run(self, module: cst.Module) -> None:
        by_type: dict[type, tuple[list, list]] = {}
        stack: list[object] = [module]
        pop, extend, dispatch = stack.pop, stack.extend, self._dispatch
        while stack:
            node = pop()
            if type(node) is _Leave:
                dispatch(node.handlers, node.node)  # type: ignore[attr-defined]
                continue
            node_type = type(node)
            handlers = by_type.get(node_type)
            if handlers is None:
                name = node_type.__name__
                handlers = by_type[node_type] = (self._visit.get(name, []),
                                                 self._leave.get(name, []))
            visit, leave = handlers
            if visit:
                dispatch(visit, node)  # type: ignore[arg-type]
            if leave:
                stack.append(_Leave(node, leave))  # type: ignore[arg-type]
            extend(reversed(children(node)))  # type: ignore[arg-type]

    def _dispatch(self, handlers: list[tuple[Rule, Callable[[cst.CSTNode], object]]],
                  node: cst.CSTNode) -> None:
        for rule, handler in handlers:
            if id(rule) in self.failed:
                continue
            try:
                handler(node)
            except Exception as error:  # noqa: BLE001 - reported, never swallowed
                self.failed[id(rule)] = (rule, node, error)


class _Leave:
    """On the batched walk's stack: ``node``'s children are done, run its ``leave_*``."""

    __slots__ = ("handlers", "node")

    def __init__(self, node: cst.CSTNode,
                 handlers: list[tuple[Rule, Callable[[cst.CSTNode], object]]]) -> None:
        self.node = node
        self.handlers = handlers


class _Replacer(cst.CSTTransformer):
    """Puts each fix's new nodes in place, and lazy imports right after their anchor line.

    ``reach``: the nodes on the way from the module to every edited node; the walk does
    not enter any other subtree (LibCST rebuilds what it enters, which on a long file
    cost more than the parse). None: enter everything."""

    def __init__(self, replacements: dict[int, object],
                 after: dict[int, list[cst.SimpleStatementLine]],
                 reach: set[int] | None = None) -> None:
        super().__init__()
        self._replacements = replacements
        self._after = after
        self._reach = reach

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self._reach is None or id(node) in self._reach

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def]
        replacement = self._replacements.get(id(original_node))
        result = updated_node if replacement is None else replacement
        added = self._after.get(id(original_node))
        if not added:
            return result
        if isinstance(result, cst.RemovalSentinel):
            return cst.FlattenSentinel(added)
        kept = list(result.nodes) if isinstance(result, cst.FlattenSentinel) else [result]
        return cst.FlattenSentinel([*kept, *added])


def _reach(names: NameIndex, module: cst.Module, targets: Iterable[int],
           nodes: dict[int, cst.CSTNode]) -> set[int] | None:
    """The ids of ``targets`` and of every node above them, or None when the index does
    not know a target's way up to ``module`` (it skips the inside of import statements)."""
    reach: set[int] = set()
    for target in targets:
        node: cst.CSTNode | None = nodes[target]
        while node is not None and id(node) not in reach:
            reach.add(id(node))
            if node is module:
                break
            node = names.parent(node)
        else:
            if node is None:
                return None
    return reach


def active_rules(options: FileOptions) -> list[type[Rule]]:
    # Sorted (options.codes is): rule order decides which of two fixes on one node goes
    # first, and must not depend on the hash seed.
    return [rule_by_code(code) for code in options.codes]


def syntax_error(text: str, path: str) -> tuple[int, int, str] | None:
    """(line, column, message) when Python itself cannot parse the text."""
    try:
        ast.parse(text, filename=path)
    except SyntaxError as error:
        line = error.lineno or 1
        column = error.offset or 1
        return line, column, error.msg
    except ValueError as error:  # null bytes
        return 1, 1, str(error)
    return None


MAX_NESTING = 200
"""Python's tokenizer refuses brackets nested deeper than this (MAXLEVEL in CPython)."""
_BRACKETS = re.compile(r"[][(){}]")


def nested_too_deep(text: str) -> bool:
    """Whether brackets in ``text`` may nest deeper than Python accepts (brackets inside
    strings and comments count too: a yes is confirmed with ``ast``). Costs a scan of the
    brackets, and nothing for a file with few of them."""
    if sum(text.count(opening) for opening in "([{") <= MAX_NESTING:
        return False
    depth = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "([{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif depth:
            depth -= 1
    return False


USE_AST_PREFILTER = True
"""The second stage of the prefilter (``Rule.needs``, read with ``ast``); tests switch it off
to prove it changes no finding."""


def _prefilter(rules: Sequence[type[Rule]], text: str, path: str = "") -> Selection:
    """Rules that could match this text; the file is parsed only if there is one.

    See :mod:`torchfix_codemods.prefilter`: a rule's ``triggers`` (substrings, and
    ``torch`` for rules that match torch names), then its ``needs`` (words of the code).
    """
    candidates = [rule for rule in rules if rule.code not in PARSE_CODES]
    return could_match(candidates, text, use_ast=USE_AST_PREFILTER,
                       known=known_facts(path, text) if KNOWN_FACTS else None)


def process(unit: SourceUnit, options: FileOptions, *, apply_fixes: bool,
            project: ProjectFacts = NO_PROJECT, locate_edits: bool = False,
            only: tuple[int, int, str] | None = None) -> FileResult:
    """Analyse one unit; with ``apply_fixes``, compute its fixed text too.

    ``locate_edits`` (for ``--diff``) also records which lines each code's fixes
    touched, so hunks can name their rule (see ``attribution``). ``only`` (line,
    column, code, 1-based as in :class:`Finding`) applies that one finding's fix and
    nothing else (an editor's quick fix), under the same checks as every fix.
    A unit that does not parse only because of a legacy ``async=`` keyword is
    analysed repaired (:mod:`~torchfix_codemods.legacy_syntax`, TFC004).
    """
    repair = legacy_syntax.repair_unit(unit, options.codes)
    if repair is None:
        result = _process(unit, options, apply_fixes=apply_fixes, project=project,
                          locate_edits=locate_edits, only=only)
        return legacy_syntax.explain_unselected(unit, options.codes, result)
    repaired_unit, repaired = repair
    result = _process(repaired_unit, options, apply_fixes=apply_fixes, project=project,
                      locate_edits=locate_edits, only=only)
    return legacy_syntax.with_repair(unit, repaired, result, apply_fixes)


def _process(unit: SourceUnit, options: FileOptions, *, apply_fixes: bool,
             project: ProjectFacts, locate_edits: bool,
             only: tuple[int, int, str] | None) -> FileResult:
    started = time.process_time()
    rules = active_rules(options)
    result = FileResult(unit.path, original=unit.text)
    codes = {rule.code for rule in rules}
    selection = _prefilter(rules, unit.text, unit.path)
    runnable: list[type[Rule]] = selection.rules  # type: ignore[assignment]
    if project is not NO_PROJECT:
        # The other side of an edit made in two files (a loader sharded where it is built):
        # the index, not the text, says the rule has work here.
        wanted = [rule for rule in rules if rule not in runnable and rule.project_facts
                  and rule.wanted_by_project(project)]
        if wanted:
            runnable = [rule for rule in rules if rule in runnable or rule in wanted]
    if not runnable:
        # ``ast`` already parsed the text when the prefilter read its words.
        if SYNTAX_ERROR_CODE in codes and selection.parses is not True:
            error = syntax_error(unit.text, unit.path)
            if error is not None:
                result.findings.append(_syntax_finding(unit.path, *error))
        return result
    if selection.parses is not True and nested_too_deep(unit.text):
        # LibCST's native parser would overflow its stack (a segmentation fault) or take
        # minutes on what Python itself refuses: "too many nested parentheses".
        error = syntax_error(unit.text, unit.path)
        if error is not None:
            if SYNTAX_ERROR_CODE in codes:
                result.findings.append(_syntax_finding(unit.path, *error))
            return result
    deep = depth_problem(unit.text, options.max_nesting_depth)
    if deep is not None:  # proved before LibCST's native parser sees the text
        raise TooComplex(deep)
    try:
        module = parse_unchecked(unit.text) if selection.parses else cst.parse_module(unit.text)
    except (cst.ParserSyntaxError, cst.CSTValidationError) as error:
        # A node LibCST's parser builds but refuses (found by tests/test_fuzz.py: a letter of
        # a Unicode version newer than this Python's, which its parser takes for a name and
        # its node for no identifier) is a file that does not parse here, not a crash.
        if SYNTAX_ERROR_CODE in codes:
            located = syntax_error(unit.text, unit.path)
            if located is None and isinstance(error, cst.ParserSyntaxError):
                located = (error.raw_line, error.raw_column + 1,
                           "LibCST cannot parse this file: " + error.message)
            elif located is None:
                located = (1, 1, f"LibCST cannot parse this file: {error}")
            result.findings.append(_syntax_finding(unit.path, *located))
        return result
    silenced = noqa_lines(unit.text)
    first = _analyse(unit, module, runnable, options, project, silenced)
    # LibCST parses syntax this Python cannot compile (3.12's under 3.11, deep nesting): say
    # so in ``check`` and ``fix`` alike, not blame a fix. Compiled only when a fix is at stake.
    unverifiable = (uncompilable(unit.text, unit.path)
                    if selection.parses is not True and _has_fix(first.located) else None)
    if not apply_fixes or unverifiable is not None:
        result.findings = _to_findings(unit.path, first.located, options, applied=set(),
                                       withheld=unverifiable)
        return result
    return _fix(unit, module, runnable, options, project, first, result, locate_edits, only,
                time.process_time() - started)


def parse_unchecked(text: str) -> cst.Module:
    """``cst.parse_module(text)`` without LibCST's per-node validation, for a text that
    Python's own parser has accepted.

    Every node LibCST builds checks its own fields in ``__post_init__`` (parentheses paired,
    whitespace where a keyword needs it); for a tree its parser built from valid Python
    those checks cannot fail, yet they were 15% of the parse (2.69 against 2.25 CPU s over
    187 files). Nodes built later (fixes) are validated as always."""
    post_init = cst.CSTNode.__post_init__
    cst.CSTNode.__post_init__ = _unvalidated  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        cst.CSTNode.__post_init__ = post_init  # type: ignore[method-assign]


def _unvalidated(node: cst.CSTNode) -> None:
    """A node's ``__post_init__`` while :func:`parse_unchecked` runs: nothing to check."""


def _has_fix(located: Sequence[Located]) -> bool:
    return any(finding.fixes for finding, _ in located)


def _syntax_finding(path: str, line: int, column: int, message: str) -> Finding:
    rule = rule_by_code(SYNTAX_ERROR_CODE)
    return Finding(path, line, column, line, column, rule.code, rule.name,
                   f"{rule.message}: {message}; file left untouched")


def _analyse(
    unit: SourceUnit,
    module: cst.Module,
    rules: Sequence[type[Rule]],
    options: FileOptions,
    project: ProjectFacts,
    silenced: dict[int, frozenset[str]],
) -> _Analysis:
    # The name index, the rules' walk and the analyses they call walk this one tree about
    # four times over: each node's children are computed once (issue 23).
    with children_memoized():
        return _analyse_tree(unit, module, rules, options, project, silenced)


def _analyse_tree(
    unit: SourceUnit,
    module: cst.Module,
    rules: Sequence[type[Rule]],
    options: FileOptions,
    project: ProjectFacts,
    silenced: dict[int, frozenset[str]],
) -> _Analysis:
    names = NameIndex.build(module, project)
    context = RuleContext(unit.path, unit.text, module, names, Imports(names), options.rules)
    instances = [rule(context) for rule in rules]
    visitor = _BatchedVisitor(instances)
    visitor.run(module)
    failed_types = {type(rule) for rule, _, _ in visitor.failed.values()}
    findings = outside_compat_guards(
        names, [f for f in context.findings if f.rule not in failed_types])
    for rule, node, error in visitor.failed.values():
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        findings.append(NodeFinding(type(rule), node,
                                    f"internal error in {rule.code} on this file, its findings "
                                    f"here are dropped ({detail})", reason="internal-error"))
    if not findings:
        return _Analysis([], names)
    positions = positions_of(module, [finding.node for finding in findings])
    located: list[Located] = []
    for finding in findings:
        code_range = positions.get(id(finding.node))
        if code_range is None:
            continue
        if is_silenced(silenced, finding.rule.code, code_range.start.line, code_range.end.line):
            continue
        located.append((finding, code_range))
    located.sort(key=lambda item: (item[1].start.line, item[1].start.column))
    return _Analysis(located, names)


def outside_compat_guards(names: NameIndex, findings: list[NodeFinding]) -> list[NodeFinding]:
    """Findings outside the code that supports older torch releases (``except TypeError:``
    fallbacks, old-release branches of version checks: :mod:`analysis.compat`). A finding
    whose node is outside but whose fix would edit inside keeps no fix."""
    kept = []
    for finding in findings:
        if guard_of(names, finding.node) is not None:
            continue
        fixes = tuple(fix for fix in finding.fixes if not any(
            guard_of(names, old) is not None for old, _ in fix.replacements))
        if len(fixes) != len(finding.fixes):
            finding = dataclasses.replace(finding, fixes=fixes)
        kept.append(finding)
    return kept


def _tier_allowed(fix: Fix, options: FileOptions) -> bool:
    if fix.safety is Safety.NONE:
        return False
    return fix.safety is Safety.SAFE or options.unsafe_fixes


def choose_fix(fixes: Sequence[Fix], options: FileOptions) -> Fix | None:
    """The fix a finding gets under this run's policy: the first of its alternatives whose
    safety tier the run allows; without one, the first (shown, not applied)."""
    for fix in fixes:
        if _tier_allowed(fix, options):
            return fix
    return fixes[0] if fixes else None


def _allowed(fix: Fix | None, options: FileOptions) -> bool:
    """Whether ``fix`` may be applied: its tier is allowed and the target torch has it."""
    if fix is None or not _tier_allowed(fix, options):
        return False
    target = options.target_torch
    return not (fix.min_torch is not None and target is not None and target < fix.min_torch)


def _fix(
    unit: SourceUnit,
    module: cst.Module,
    rules: Sequence[type[Rule]],
    options: FileOptions,
    project: ProjectFacts,
    first: _Analysis,
    result: FileResult,
    locate_edits: bool = False,
    only: tuple[int, int, str] | None = None,
    analysis_cost: float = 0.0,
) -> FileResult:
    """The fix rounds after the first analysis (which took ``analysis_cost`` CPU seconds, the
    estimate of a round's cost until a round is measured)."""
    text = unit.text
    if not any(item[0].withheld is None and _allowed(choose_fix(item[0].fixes, options), options)
               for item in first.located):
        result.findings = _to_findings(unit.path, first.located, options, applied=set())
        return result
    if module.code + _lost_ending(text) != text:
        # LibCST drops some bytes it parses: a form feed before a statement (found by the
        # fuzzer). Writing its code back would change lines no fix touches. (The last `\r`
        # of a CR-only file it drops too, and that one the engine puts back.)
        result.findings = _to_findings(unit.path, first.located, options, applied=set(),
                                       withheld=NOT_ROUND_TRIPPED)
        return result
    applied: list[Located] = []
    rounds: list[tuple[cst.Module, list[tuple[str, Fix]]]] = []
    maps: list[attribution.LineMap | None] = []  # each round's lines back to the file's
    withheld: str | None = None
    current = first
    current_module = module
    estimate = analysis_cost
    for _ in range(MAX_FIX_ROUNDS):
        round_started = time.process_time()
        candidates = []
        for item in current.located:
            fix = choose_fix(item[0].fixes, options)
            if item[0].withheld is None and fix is not None and _allowed(fix, options):
                candidates.append((item, fix))
        if only is not None:
            if rounds:
                break  # one finding's fix: what it exposes waits for the next request
            candidates = [(item, fix) for item, fix in candidates
                          if (item[1].start.line, item[1].start.column + 1,
                              item[0].rule.code) == only]
        if not candidates:
            break
        late = _past_budget(estimate)
        if late is not None:
            withheld = late
            break
        chosen = _non_overlapping(current.names, candidates)
        try:
            new_module = _apply(current_module, [fix for _, fix in chosen], current.names)
            new_text = new_module.code + _lost_ending(text)
        except Exception as error:  # noqa: BLE001 - a broken fix must not crash the run
            withheld = f"applying the fixes failed ({type(error).__name__}: {error})"
            break
        if new_text == text:
            break
        problem = check_rewrite(text, new_text, unit.path)
        if problem is not None:
            withheld = problem
            break
        back = attribution.LineMap(unit.text, current_module.code) if rounds else None
        applied.extend(_at_original_lines(item, back) for item, _ in chosen)
        rounds.append((current_module, [(item[0].rule.code, fix) for item, fix in chosen]))
        maps.append(back)
        text = new_text
        # ``check_rewrite`` compiled this text: LibCST's per-node checks cannot fail on it.
        current_module = new_module if REUSE_TREE else parse_unchecked(text)
        current = _analyse(unit, current_module, rules, options, project, noqa_lines(text))
        estimate = time.process_time() - round_started
    if withheld is not None:
        result.findings = _to_findings(unit.path, first.located, options, applied=set(),
                                       withheld=withheld)
        return result
    if not applied:
        result.findings = _to_findings(unit.path, first.located, options, applied=set())
        return result
    result.fixed = text
    result.new_bytes = unit.encode(text)
    if locate_edits:
        result.edits_by_code = attribution.locate_edits(unit.text, rounds, maps)
    remaining = _to_findings(unit.path, current.located, options, applied=set())
    done = _to_findings(unit.path, applied, options, applied={id(f) for f, _ in applied})
    result.findings = sorted(done + remaining, key=Finding.sort_key)
    return result


def _past_budget(estimate: float) -> str | None:
    """Why no more fix rounds start: the file's CPU budget (``file-timeout``, set by the
    worker) would run out before a round costing ``estimate`` seconds ends. A file whose
    fixing stops here keeps its findings, every fix withheld, and is not written (a worker
    killed in the middle of a round would have lost its findings too)."""
    left = cpu_left()
    if left is None or left[0] >= estimate:
        return None
    return (f"fixing this file would take longer than its time budget (file-timeout: "
            f"{left[1]:.3g} s of CPU time for this file; a round of fixes costs about "
            f"{estimate:.1f} s here)")


def _at_original_lines(item: Located, back: attribution.LineMap | None) -> Located:
    """``item`` at the lines of the file as it was, where its fix applies. A fix of a later
    round (one the previous round's output exposed) was found in that output, whose lines
    differ from the file's once a fix added or removed lines (an import at the top): ``back``
    carries them back through a line diff, as ``fix --diff`` labels its hunks. Every applied
    finding is then reported where it is in the file as it was."""
    if back is None:
        return item
    finding, where = item
    start, end = back.to_original((where.start.line - 1, where.end.line), exact=True)
    if (start + 1, max(end, start + 1)) == (where.start.line, where.end.line):
        return item
    first = CodePosition(start + 1, where.start.column)
    last = CodePosition(max(end, start + 1), where.end.column)
    return finding, CodeRange(first, last)


def _non_overlapping(names: NameIndex,
                     candidates: list[tuple[Located, Fix]]) -> list[tuple[Located, Fix]]:
    """Pick fixes whose edited nodes do not contain one another; the rest wait a round."""
    taken: set[int] = set()
    taken_ancestors: set[int] = set()
    chosen: list[tuple[Located, Fix]] = []
    for item, fix in candidates:
        # A lazy import's anchor line is edited too (a line goes in after it).
        targets = [old for old, _ in fix.replacements]
        targets += [request.after for request in fix.imports if request.after is not None]
        conflict = False
        for target in targets:
            if id(target) in taken or id(target) in taken_ancestors:
                conflict = True
            elif any(id(a) in taken for a in names.ancestors(target)):
                conflict = True
        if conflict:
            continue
        chosen.append((item, fix))
        for target in targets:
            taken.add(id(target))
            taken_ancestors.update(id(a) for a in names.ancestors(target))
    return chosen


def _lost_ending(text: str) -> str:
    """What LibCST's code generation drops from ``text``: with CR-only line endings (old Mac
    files), a module ending in ``\\r`` comes back without that last ``\\r`` (LibCST 1.x:
    ``parse_module("x = 1\\r").code == "x = 1"``), so it is put back."""
    return "\r" if text.endswith("\r") else ""


REUSE_TREE = True
"""The fix loop analyses the tree it rewrote rather than a parse of its code: the two are
equal (tests/test_fix_rounds.py proves it for every fixture's rewrite), and the parse was
about a third of a confirmation round. Tests switch it off to compare."""


def _apply(module: cst.Module, fixes: Iterable[Fix], names: NameIndex | None = None) -> cst.Module:
    """The code of ``module`` with ``fixes`` applied; ``names``, the index of ``module``,
    lets the rewrite enter only the subtrees that hold an edit."""
    replacements: dict[int, object] = {}
    nodes: dict[int, cst.CSTNode] = {}
    after: dict[int, list[cst.SimpleStatementLine]] = {}
    lazy: set[tuple[int, str]] = set()
    needed: list[str] = []
    removals: list[ImportRemoval] = []
    for fix in fixes:
        for old, new in fix.replacements:
            if names is not None and isinstance(old, cst.BaseExpression) and \
                    isinstance(new, cst.BaseExpression):
                new = in_place_of(new, old, names.parent(old))
            replacements[id(old)] = new
            nodes[id(old)] = old
        for request in fix.imports:
            if request.after is None:
                needed.append(request.module)
            elif (id(request.after), request.module) not in lazy:
                nodes[id(request.after)] = request.after
                lazy.add((id(request.after), request.module))
                after.setdefault(id(request.after), []).append(cst.SimpleStatementLine(
                    [cst.Import([cst.ImportAlias(cst.parse_expression(request.module))])]))
        removals.extend(fix.remove_imports)
    if removals and names is not None:
        removals = _not_imported_elsewhere(removals, names.project.imported_names())
    reach = _reach(names, module, nodes, nodes) if names is not None else None
    new_module = module.visit(_Replacer(replacements, after, reach))
    if needed:
        new_module = add_module_imports(new_module, needed)
    own = [removal for removal in removals if handles(removal)]
    if own:
        new_module = remove_unused_imports(new_module, own)
    others = [removal for removal in removals if not handles(removal)]
    if others:
        # libcst.codemod costs more to import than a whole check of a small file: load it
        # only for the removals this project does not decide itself (``import a.b``).
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import RemoveImportsVisitor

        remove_context = CodemodContext()
        for removal in others:
            RemoveImportsVisitor.remove_unused_import(remove_context, removal.module, removal.name)
        new_module = RemoveImportsVisitor(remove_context).transform_module(new_module)
    return new_module


def _not_imported_elsewhere(removals: list[ImportRemoval],
                            imported: frozenset[str]) -> list[ImportRemoval]:
    """The removals of imports no other file of the run reads from this one: a name another
    file imports from here, by name or through ``from this import *``, stays bound even
    when this file no longer reads it (``Variable`` that ``utils.py`` imports and
    ``train.py`` gets from ``from utils import *``)."""
    if EVERY_NAME in imported:
        return []
    return [removal for removal in removals
            if (removal.name or removal.module.split(".")[0]) not in imported]


def _to_findings(
    path: str,
    located: Sequence[Located],
    options: FileOptions,
    *,
    applied: set[int],
    withheld: str | None = None,
) -> list[Finding]:
    findings = []
    for finding, code_range in located:
        fix = choose_fix(finding.fixes, options)
        fix_info = None
        if fix is not None and fix.safety is not Safety.NONE:
            reason = finding.withheld
            target = options.target_torch
            if reason is None and fix.min_torch is not None and target and target < fix.min_torch:
                wanted = ".".join(map(str, fix.min_torch))
                reason = f"needs torch >= {wanted}, target is older"
            if reason is None and withheld is not None and _allowed(fix, options):
                reason = withheld
            fix_info = FixInfo(fix.safety, fix.description,
                               applied=id(finding) in applied, withheld=reason)
        rule = finding.rule
        findings.append(Finding(
            path, code_range.start.line, code_range.start.column + 1,
            code_range.end.line, code_range.end.column + 1,
            rule.code, rule.name, finding.message, fix_info, finding.reason,
            internal_error=finding.reason == "internal-error", note=finding.note,
        ))
    return findings


def read_unit(path: str, data: bytes) -> SourceUnit | Finding:
    """A file's bytes as a unit (:func:`~torchfix_codemods.source.load_source`), or a TFC000
    finding saying why they cannot be decoded; a notebook that cannot be read raises
    :class:`~torchfix_codemods.notebooks.NotebookError`."""
    try:
        return load_source(path, data)
    except UndecodableSource as error:
        return _syntax_finding(path, 1, 1, str(error))
