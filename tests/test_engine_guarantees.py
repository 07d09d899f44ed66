"""The never-break-code guarantees (see engine.py), tested once for every rule in the registry.

Each rule's invalid examples (with their expected rewrites) are pushed through
variants that a real repository contains: aliased imports, CRLF, a latin-1
coding cookie, a BOM, tab indentation, no trailing newline, ``# noqa``. The
rewrite must come out exactly as the variant of the expected text, and a
second run must change nothing. Engine behaviours that no real rule triggers
on purpose (a crashing rule, a fix that would break the file) use fake rules.
"""

from __future__ import annotations

import ast
import codecs
import re
import textwrap
from collections.abc import Callable

import libcst as cst
import pytest
from support import fix_bytes, options_for

from torchfix_codemods import engine
from torchfix_codemods.catalog import PARSE_CODES
from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Example, Fix, Rule
from torchfix_codemods.rules.registry import all_rules, rule_by_code
from torchfix_codemods.source import SourceUnit

FIXABLE = [
    (rule, index, example)
    for rule in all_rules()
    for index, example in enumerate(rule.invalid)
    if example.after is not None
]
FLAGGED = [(rule, index, example) for rule in all_rules() for index, example in enumerate(rule.invalid)]


def _ids(value: object) -> str | None:
    return value.code if isinstance(value, type) else None


def _run(data: bytes, rule: type[Rule], example: Example, path: str = "case.py") -> bytes:
    result = fix_bytes(data, [rule.code], unsafe=example.unsafe, path=path)
    return result.new_bytes if result.new_bytes is not None else data


Variant = Callable[[str], str]


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def _tabs(text: str) -> str:
    return re.sub(r"(?m)^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), text)


def _no_trailing_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


TEXT_VARIANTS: dict[str, Variant] = {
    "identity": lambda text: text,
    "crlf": _crlf,
    "cr-only": lambda text: text.replace("\n", "\r"),
    "tabs": _tabs,
    "no-trailing-newline": _no_trailing_newline,
    "comment-preamble": lambda text: "#!/usr/bin/env python\n# A comment that must survive.\n" + text,
}


@pytest.mark.parametrize("variant", list(TEXT_VARIANTS))
@pytest.mark.parametrize(("rule", "index", "example"), FIXABLE, ids=_ids)
def test_rewrite_survives_layout_variants(rule, index, example, variant) -> None:
    transform = TEXT_VARIANTS[variant]
    if variant == "tabs" and "    " not in example.before:
        pytest.skip("example has no indentation")
    before = transform(example.before).encode("utf-8")
    expected = transform(example.after).encode("utf-8")
    assert _run(before, rule, example) == expected


@pytest.mark.parametrize(("rule", "index", "example"), FIXABLE, ids=_ids)
def test_latin1_cookie_and_bytes_survive(rule, index, example) -> None:
    preamble = "# -*- coding: latin-1 -*-\n# caf\xe9 na\xefve\n"
    before = (preamble + example.before).encode("latin-1")
    expected = (preamble + example.after).encode("latin-1")
    assert _run(before, rule, example) == expected


@pytest.mark.parametrize(("rule", "index", "example"), FIXABLE, ids=_ids)
def test_bom_survives(rule, index, example) -> None:
    before = codecs.BOM_UTF8 + example.before.encode("utf-8")
    expected = codecs.BOM_UTF8 + example.after.encode("utf-8")
    assert _run(before, rule, example) == expected


@pytest.mark.parametrize(("rule", "index", "example"), FIXABLE, ids=_ids)
def test_fix_is_idempotent(rule, index, example) -> None:
    once = _run(example.before.encode("utf-8"), rule, example)
    assert _run(once, rule, example) == once
    # Every rule at once must also reach a fixed point.
    every = [r.code for r in all_rules()]
    first = fix_bytes(example.before.encode(), every, unsafe=True)
    text = first.new_bytes or example.before.encode()
    second = fix_bytes(text, every, unsafe=True)
    assert second.new_bytes is None, f"a second fix changed:\n{second.fixed}"


def _aliased(text: str) -> str | None:
    """``import torch`` -> ``import torch as T`` and ``torch.x`` -> ``T.x`` outside imports and
    string literals (``import_module("torch._dynamo")`` names a module, not the alias)."""
    if not re.search(r"(?m)^import torch$", text):
        return None
    lines = []
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") == "import torch":
            lines.append("import torch as T\n")
        elif line.startswith(("import ", "from ")):
            lines.append(line)
        else:
            parts = re.split(r"(\"[^\"]*\"|'[^']*')", line)
            lines.append("".join(part if part[:1] in "\"'" else re.sub(r"\btorch\.", "T.", part)
                                 for part in parts))
    return "".join(lines)


@pytest.mark.parametrize(("rule", "index", "example"), FIXABLE, ids=_ids)
def test_fix_uses_the_files_own_alias(rule, index, example) -> None:
    before, after = _aliased(example.before), _aliased(example.after)
    if before is None or after is None or "import torch\n" in example.after.replace(
            "import torch as", ""):
        if before is None or after is None:
            pytest.skip("example does not start from `import torch`")
    result = _run(before.encode(), rule, example)
    assert result.decode() == after


def _shadowed(text: str) -> str | None:
    """Every torch import replaced by the same names from an unrelated ``mylib``."""
    module = cst.parse_module(text)
    replaced = False
    new_body = []
    for statement in module.body:
        names = _torch_import_names(statement)
        if names:
            replaced = True
            new_body.append(cst.parse_statement(f"from mylib import {', '.join(names)}\n"))
        else:
            new_body.append(statement)
    return module.with_changes(body=new_body).code if replaced else None


def _torch_import_names(statement: cst.BaseStatement) -> list[str]:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return []
    node = statement.body[0]
    bound = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = cst.Module([]).code_for_node(alias.name)
            if full.split(".")[0] != "torch":
                return []
            bound.append(alias.asname.name.value if alias.asname else full.split(".")[0])
    elif isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
        module = cst.Module([]).code_for_node(node.module)
        if module.split(".")[0] != "torch" or isinstance(node.names, cst.ImportStar):
            return []
        for alias in node.names:
            bound.append(alias.asname.name.value if alias.asname else alias.name.value)
    return bound


@pytest.mark.parametrize(("rule", "index", "example"), FLAGGED, ids=_ids)
def test_shadowed_torch_names_are_not_rewritten(rule, index, example) -> None:
    if not rule.uses_torch_names:
        pytest.skip("rule matches syntax, not torch names")
    shadowed = _shadowed(example.before)
    if shadowed is None:
        pytest.skip("example imports nothing from torch")
    data = shadowed.encode()
    result = fix_bytes(data, [rule.code], unsafe=True)
    assert result.new_bytes is None, f"{rule.code} rewrote code whose names are not torch's"


@pytest.mark.parametrize(("rule", "index", "example"), FLAGGED, ids=_ids)
def test_noqa_silences_findings(rule, index, example) -> None:
    unit = SourceUnit.from_bytes("case.py", example.before.encode())
    found = [f for f in engine.process(unit, options_for([rule.code]), apply_fixes=False).findings
             if f.code == rule.code]
    assert found
    lines = example.before.splitlines(keepends=True)
    for comment, silenced in ((f"  # noqa: {rule.code}", True), ("  # noqa", True),
                              ("  # noqa: TFC999", False)):
        marked = list(lines)
        for finding in found:
            row = finding.line - 1
            marked[row] = marked[row].rstrip("\n") + comment + "\n"
        text = "".join(marked)
        unit = SourceUnit.from_bytes("case.py", text.encode())
        left = [f for f in engine.process(unit, options_for([rule.code]), apply_fixes=True).findings
                if f.code == rule.code]
        assert (not left) == silenced, (comment, left)
        if silenced:
            assert fix_bytes(text.encode(), [rule.code], unsafe=True).new_bytes is None


def _lazified(text: str) -> str:
    """The whole example inside ``def main():``: every import it makes becomes a lazy one."""
    return "def main():\n" + textwrap.indent(text, "    ")


def _top_level_functions(text: str) -> set[str]:
    return {s.name.value for s in cst.parse_module(text).body if isinstance(s, cst.FunctionDef)}


def _without_blank_lines(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if line.strip())


@pytest.mark.parametrize(("rule", "index", "example"), FIXABLE, ids=_ids)
def test_lazy_imports_stay_lazy(rule, index, example) -> None:
    """Issue 9 item 4: a fix names things with what is bound where it edits, and adds an
    import next to the function's own lazy import, never at module level.

    Every example runs with all of its code, imports included, moved into a function;
    the fix must be the expected one moved the same way, and the module must still
    consist of that one function (nothing a module-level import could need).
    """
    if "__main__" in example.before or "__main__" in example.after:
        pytest.skip("the finding is about a script's module-level code")
    if rule.code in PARSE_CODES:
        pytest.skip("a parse repair renames a keyword argument and names nothing")
    if _top_level_functions(example.after) - _top_level_functions(example.before):
        pytest.skip("the fix adds module-level helpers; inside a function the rule declines")
    before = _lazified(example.before)
    result = fix_bytes(before.encode(), [rule.code], unsafe=example.unsafe)
    fixed = result.fixed if result.fixed is not None else before
    body = cst.parse_module(fixed).body
    assert [type(statement).__name__ for statement in body] == ["FunctionDef"], fixed
    # A module-level import is followed by an empty line (LibCST's AddImportsVisitor);
    # inside a function the new import goes right after its anchor.
    assert _without_blank_lines(fixed) == _without_blank_lines(_lazified(example.after))


# --------------------------------------------------------------------------- fake rules
class _Crashes(Rule):
    """Raises on every call: stands for a bug in one rule."""

    code = "TFC998"
    name = "always-crashes"
    message = "never reported"
    triggers = ("(",)

    def visit_Call(self, node: cst.Call) -> None:
        raise ZeroDivisionError("boom")


class _BreaksCode(Rule):
    """Rewrites every call to ``torch.load`` into a call of an undefined name."""

    code = "TFC997"
    name = "introduces-undefined-name"
    message = "would break the file"
    safety = Safety.SAFE
    triggers = ("load",)

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) == "torch.load":
            new = node.with_changes(func=cst.Name("undefined_loader"))
            self.report(node, fix=Fix(Safety.SAFE, "break it", [(node, new)]))


class _BadSyntax(Rule):
    """Rewrites ``torch.load`` calls into text that does not compile."""

    code = "TFC996"
    name = "emits-bad-syntax"
    message = "would not compile"
    safety = Safety.SAFE
    triggers = ("load",)

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) == "torch.load":
            # LibCST validates most nodes; a keyword as a name slips through and
            # generates text Python rejects.
            new = node.with_changes(func=cst.Name("lambda"))
            self.report(node, fix=Fix(Safety.SAFE, "break it", [(node, new)]))


class _ReadsDevice(Rule):
    """Adds ``map_location=device`` to every ``torch.load``, whether or not it is bound there."""

    code = "TFC995"
    name = "reads-device"
    message = "reads device"
    safety = Safety.SAFE
    triggers = ("load",)

    def visit_Call(self, node: cst.Call) -> None:
        if self.qualified_name(node.func) == "torch.load" and len(node.args) == 1:
            keyword = cst.parse_expression("f(map_location=device)").args[0]  # type: ignore[attr-defined]
            new = node.with_changes(args=[*node.args, keyword])
            self.report(node, fix=Fix(Safety.SAFE, "read device", [(node, new)]))


class _UnwrapsBare(Rule):
    """Replaces ``unwrap(x)`` by ``x`` itself, bare, as a fix that forgets parentheses would."""

    code = "TFC994"
    name = "unwraps-bare"
    message = "unwraps"
    safety = Safety.SAFE
    triggers = ("unwrap",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "unwrap":
            self.report(node, fix=Fix(Safety.SAFE, "unwrap", [(node, node.args[0].value)]))


@pytest.fixture
def fake_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = {rule.code: rule for rule in (_Crashes, _BreaksCode, _BadSyntax, _ReadsDevice,
                                          _UnwrapsBare)}

    def lookup(code: str) -> type[Rule]:
        return fakes[code] if code in fakes else rule_by_code(code)

    monkeypatch.setattr(engine, "rule_by_code", lookup)


SOURCE = ("import torch\nfrom torch import nn\nnet = nn.Linear(2, 2)\n"
          "net.load_state_dict(torch.load('m.pt'))\n")
"""TFC001's fix here is safe: the result only goes into ``load_state_dict``."""


def test_crashing_rule_is_an_internal_error_and_others_still_report(fake_rules) -> None:
    result = fix_bytes(SOURCE.encode(), ["TFC998", "TFC001"])
    codes = [f.code for f in result.findings]
    assert "TFC998" in codes and "TFC001" in codes
    crash = next(f for f in result.findings if f.code == "TFC998")
    assert crash.internal_error and "ZeroDivisionError" in crash.message
    assert result.fixed is not None and "weights_only=True" in result.fixed


@pytest.mark.parametrize("code", ["TFC997", "TFC996"])
def test_fix_that_would_break_the_file_is_withheld(fake_rules, code: str) -> None:
    result = fix_bytes(SOURCE.encode(), [code, "TFC001"])
    assert result.fixed is None and result.new_bytes is None
    finding = next(f for f in result.findings if f.code == code)
    assert finding.fix is not None and finding.fix.withheld
    assert not finding.fix.applied
    reason = finding.fix.withheld
    assert ("undefined_loader" in reason) if code == "TFC997" else ("compile" in reason)
    # The sound fix in the same file is withheld too: the file keeps its text.
    other = next(f for f in result.findings if f.code == "TFC001")
    assert other.fix is not None and not other.fix.applied and other.fix.withheld


# Reduced from pytorch/examples@77f55b912142e11fcfdf5b530231fb9c52f181e8
# super_resolution/super_resolve.py: `device` exists in the module, but only after the load
# and only when `opt.accel` is set. symtable alone sees a bound name and let the fix through.
BOUND_LATER = (
    "import torch\n"
    "model = torch.load(opt.model)\n"
    "if opt.accel:\n"
    "    device = torch.accelerator.current_accelerator()\n"
    "    model = model.to(device)\n"
)
BOUND_IN_ONE_BRANCH = (
    "import torch\n\n\n"
    "def load(path, accel):\n"
    "    if accel:\n"
    "        device = 'cuda'\n"
    "    return torch.load(path)\n"
)
# A name bound only by the module's script block does not exist when another module imports
# this one and calls the function (jfzhang95/pytorch-deeplab-xception's backbones, whose only
# `import torch` is under `if __name__ == "__main__":`).
BOUND_ONLY_AS_A_SCRIPT = (
    "import torch\n\n\n"
    "def load(path):\n"
    "    return torch.load(path)\n\n\n"
    "if __name__ == '__main__':\n"
    "    device = 'cuda'\n"
    "    load('x')\n"
)
BOUND_BEFORE = (
    "import torch\n"
    "if opt.accel:\n"
    "    device = 'cuda'\n"
    "else:\n"
    "    device = 'cpu'\n"
    "model = torch.load(opt.model)\n"
)


@pytest.mark.parametrize("source", [BOUND_LATER, BOUND_IN_ONE_BRANCH, BOUND_ONLY_AS_A_SCRIPT],
                         ids=["later", "branch", "script-only"])
def test_fix_reading_a_name_before_it_is_bound_is_withheld(fake_rules, source: str) -> None:
    """Issue 16 item 1: the undefined-name check respects order and branches."""
    result = fix_bytes(source.encode(), ["TFC995"])
    assert result.fixed is None
    [finding] = result.findings
    assert finding.fix is not None and not finding.fix.applied
    assert finding.fix.withheld is not None
    assert "`device`" in finding.fix.withheld and "may not be bound" in finding.fix.withheld


def test_fix_reading_a_name_bound_on_every_path_is_applied(fake_rules) -> None:
    result = fix_bytes(BOUND_BEFORE.encode(), ["TFC995"])
    assert result.fixed == BOUND_BEFORE.replace("load(opt.model)", "load(opt.model, map_location=device)")


def test_a_file_libcst_cannot_write_back_byte_for_byte_is_left_untouched() -> None:
    # Found by tests/test_fuzz.py: LibCST parses a form feed before a statement and drops it
    # when it writes the module back, so fixing a torch.load elsewhere removed it.
    from support import fix_bytes

    data = b"import torch\n\x0cstate = torch.load(path)\n"
    result = fix_bytes(data, ["TFC001"], unsafe=True)
    assert result.fixed is None
    [finding] = result.findings
    assert finding.fix is not None and not finding.fix.applied
    assert finding.fix.withheld == ("LibCST would not write this file back byte for byte (a "
                                    "form feed before a statement?), so it is left untouched")
    fixed = fix_bytes(data.replace(b"\x0c", b""), ["TFC001"], unsafe=True).fixed
    assert fixed == "import torch\nstate = torch.load(path, weights_only=True)\n"


# Reduced from keon/seq2seq@0e124a7b0da81f44cba9fa9944d95fdbd4e16efc model.py:
# `Variable(trg.data[t] if is_teacher else top1).cuda()` lost its parentheses once, and
# `.cuda()` applied to one branch only. Whatever a fix puts where an expression stood, the
# code around it must compute what it computed.
@pytest.mark.parametrize("expression", [
    "unwrap(a if t else b).real",
    "unwrap(a + b) * c",
    "c - unwrap(a - b)",
    "unwrap(a ** b) ** c",
    "c ** unwrap(-a)",
    "-unwrap(a + b)",
    "not unwrap(t or f)",
    "unwrap(a < b) < c",
    "unwrap(t or f) and f",
    "unwrap(f and t) or t",
    "unwrap(a if f else b) if t else c",
    "unwrap(lambda: a)()",
    "unwrap(a)[0:1] if False else unwrap(a if t else b) + 1",
    "unwrap((a + b))",
    "[unwrap(a if t else b), unwrap(a + b)]",
])
def test_a_replacement_never_changes_what_its_surroundings_compute(fake_rules,
                                                                     expression: str) -> None:
    source = f"import torch\n\n\ndef unwrap(x):\n    return x\n\n\nvalue = {expression}\n"
    result = fix_bytes(source.encode(), ["TFC994"])
    assert result.fixed is not None
    fixed = result.fixed
    assert "unwrap(" not in fixed.split("value = ", 1)[1], fixed
    names = {"a": 2, "b": 3, "c": 5, "t": True, "f": False}

    def value_of(text: str) -> object:
        namespace = dict(names)
        exec(compile(text, "<case>", "exec"), namespace)  # noqa: S102 - the test's own code
        result = namespace["value"]
        return result() if callable(result) else result

    assert value_of(fixed) == value_of(source), fixed

    class _Unwrap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id == "unwrap":
                return node.args[0]
            return node

    # The same tree as the original with each call replaced by its argument: what the
    # code computes, not only the value these inputs happen to give.
    expected = _Unwrap().visit(ast.parse(source).body[-1])
    assert ast.dump(ast.parse(fixed).body[-1]) == ast.dump(expected), fixed
    # Nothing parenthesised that needed no parentheses: a whole value stays bare.
    if expression.startswith("[unwrap"):
        assert "[a if t else b, a + b]" in fixed


def test_a_fix_of_a_later_round_is_reported_at_its_line_in_the_file_as_it_was() -> None:
    # Found by tests/test_fuzz.py: `torch` is unbound until TFC110's fix adds `import torch`
    # at the top; the next round then fixes the loads, found in that round's text two lines
    # lower. Applied findings are all reported at the original's lines, as `fix --diff`
    # labels them (the loads were reported at lines 5 and 6).
    data = (b"import torch.nn as nn\n\nm = nn.Linear(3, 2)\n"
            b"y = torch.load(x)\ny = torch.load(x)\nm.weight.normal_(0, 0.02)\n")
    result = fix_bytes(data, ["TFC001", "TFC110"], unsafe=True)
    assert result.fixed is not None and result.fixed.startswith("import torch.nn as nn\nimport torch\n")
    applied = [(f.code, f.line, f.end_line) for f in result.findings if f.fix and f.fix.applied]
    assert applied == [("TFC001", 4, 4), ("TFC001", 5, 5), ("TFC110", 6, 6)], applied


def test_a_letter_newer_than_this_pythons_unicode_is_a_syntax_finding_not_a_crash() -> None:
    # Found by tests/test_fuzz.py: U+31350 (CJK Extension H, Unicode 15) starts a name for
    # LibCST's parser, but not for Python 3.11's `str.isidentifier`, so building the Name
    # node raised CSTValidationError out of the engine ("internal error" in a run).
    data = "\U00031350# a comment\nimport torch\n\nstate = torch.load(path)\n".encode()
    result = fix_bytes(data, ["TFC000", "TFC001"], unsafe=True)
    if "\U00031350".isidentifier():  # a Python whose Unicode knows the letter
        pytest.skip("this Python reads U+31350 as a letter")
    assert result.fixed is None
    assert [(f.code, f.line) for f in result.findings] == [("TFC000", 1)]
    assert "U+31350" in result.findings[0].message
