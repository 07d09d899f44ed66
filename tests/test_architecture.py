"""The seams the code is built on, checked so they stay where they are.

Layers point one way (rules -> edits -> analysis), no rule module reaches
into another, the rules get their narrow options and their project facts
through the context, the engine (not a rule) chooses a fix by tier, the cache
key is derived from the options, and what a cache hit needs imports neither
LibCST nor any rule.
"""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest
from support import fix_bytes, options_for

from torchfix_codemods import cache, engine
from torchfix_codemods.analysis.project import NO_PROJECT, ClassFacts, ProjectFacts
from torchfix_codemods.catalog import CATALOG
from torchfix_codemods.findings import Safety
from torchfix_codemods.options import FileOptions, RuleOptions
from torchfix_codemods.rules.base import Rule
from torchfix_codemods.rules.registry import all_rules, rule_by_code
from torchfix_codemods.source import SourceUnit

PACKAGE = Path(__file__).resolve().parent.parent / "torchfix_codemods"
# Modules of rules/ that hold no rule: the base classes, the registry, the data loader.
RULE_INFRASTRUCTURE = {"base", "registry", "table_rule", "tables"}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _rule_modules() -> list[Path]:
    """Every module of rules/, those of a rule split into a package (rules/NAME/*.py) too."""
    return sorted((PACKAGE / "rules").rglob("*.py"))


def test_no_rule_module_imports_another_rule_module() -> None:
    for path in _rule_modules():
        if path.stem in RULE_INFRASTRUCTURE or path.name == "__init__.py" and \
                path.parent.name == "rules":
            continue
        # A rule split into a package reads its own modules, and no other rule's.
        own = "torchfix_codemods.rules." + path.relative_to(PACKAGE / "rules").parts[0]
        for module in _imports(path):
            if module.startswith("torchfix_codemods.rules.") and not (
                    module == own or module.startswith(own + ".")):
                assert module.rsplit(".", 1)[1] in RULE_INFRASTRUCTURE, f"{path.name} -> {module}"


def test_a_rule_package_is_checked_like_a_rule_module() -> None:
    """The walk above reaches the modules of a rule package (it would pass vacuously if not)."""
    split = {p.relative_to(PACKAGE / "rules").as_posix() for p in _rule_modules()}
    assert {"data_parallel/detection.py", "data_parallel/migration.py"} <= split


@pytest.mark.parametrize(("layer", "forbidden"), [
    ("analysis", ("torchfix_codemods.edits", "torchfix_codemods.rules", "torchfix_codemods.engine",
                  "torchfix_codemods.settings", "torchfix_codemods.runner")),
    ("edits", ("torchfix_codemods.rules", "torchfix_codemods.engine",
               "torchfix_codemods.settings", "torchfix_codemods.runner")),
])
def test_layers_point_one_way(layer: str, forbidden: tuple[str, ...]) -> None:
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module in _imports(path):
            assert not module.startswith(forbidden), f"{layer}/{path.name} imports {module}"


ANALYSIS = "torchfix_codemods.analysis"


@pytest.mark.parametrize(("wing", "may_import"), [
    # Python semantics. `analysis.project` is the protocol of project facts a name index
    # carries, not a fact of its own.
    ("core", ("core", "project")),
    # The PyTorch vocabulary: plain names, readable from both parsers.
    ("vocabulary", ("vocabulary",)),
    # Per-file facts on LibCST, built on the two wings above.
    ("facts", ("core", "vocabulary", "facts", "project")),
    # Cross-file facts, read with `ast` in a first pass over the run: no LibCST wing.
    # (noqa: where a summary records the file's suppressions; core.memo: the typed memo,
    # plain Python, which the index keeps its answers in; core.ast_walk: the summaries'
    # walk over stdlib `ast` trees, which imports nothing of LibCST.)
    ("project", ("vocabulary", "project", "core.memo", "core.ast_walk",
                 "torchfix_codemods.noqa")),
])
def test_each_analysis_wing_imports_only_the_wings_below_it(
        wing: str, may_import: tuple[str, ...]) -> None:
    allowed = tuple(name if name.startswith("torchfix_codemods.") else f"{ANALYSIS}.{name}"
                    for name in may_import)
    for path in sorted((PACKAGE / "analysis" / wing).rglob("*.py")):
        for module in _imports(path):
            if module.startswith("torchfix_codemods."):
                assert module.startswith(allowed), f"analysis/{wing}/{path.name} imports {module}"


def test_the_vocabulary_imports_neither_libcst_nor_the_package() -> None:
    for path in sorted((PACKAGE / "analysis" / "vocabulary").rglob("*.py")):
        for module in _imports(path):
            assert module.split(".")[0] not in ("libcst", "ast"), f"{path.name} imports {module}"
            assert not module.startswith("torchfix_codemods.") or module.startswith(
                f"{ANALYSIS}.vocabulary"), f"{path.name} imports {module}"


def test_the_ast_side_of_project_facts_imports_no_libcst() -> None:
    """The project facts are read with `ast` in a first pass; LibCST stays out."""
    for path in sorted((PACKAGE / "analysis" / "project").rglob("*.py")):
        for module in _imports(path):
            assert module.split(".")[0] != "libcst", f"{path.name} imports {module}"


def _torch_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("frozenset", "set", "dict") and node.args:
        node = node.args[0]
    if isinstance(node, ast.Dict):
        elements = [key for key in node.keys if key is not None]
    elif isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        elements = node.elts
    else:
        return []
    return [e.value for e in elements
            if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.startswith("torch.")]


def _membership_literals(tree: ast.AST) -> list[ast.expr]:
    """Tuples and lists a name is looked up in where they are written: ``q in ("a", "b")``,
    ``q.startswith(("a", "b"))``."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found += [right for op, right in zip(node.ops, node.comparators, strict=True)
                      if isinstance(op, (ast.In, ast.NotIn))]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith"):
            found += node.args
    return [node for node in found if isinstance(node, (ast.Tuple, ast.List))]


def _torch_name_collections(path: Path) -> list[str]:
    """Sets and dicts of torch names anywhere, tuples/lists of them bound at module level, and
    two or more of them written inline where a name is looked up."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [f"{path.name}:{node.lineno}" for node in ast.walk(tree)
             if isinstance(node, (ast.Set, ast.Dict, ast.Call)) and _torch_names(node)]
    found += [f"{path.name}:{node.lineno}" for node in tree.body
              if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
              and isinstance(node.value, (ast.Tuple, ast.List)) and _torch_names(node.value)]
    found += [f"{path.name}:{node.lineno}" for node in _membership_literals(tree)
              if len(_torch_names(node)) >= 2]
    return found


def test_sets_of_torch_names_are_defined_only_in_the_vocabulary() -> None:
    """One PyTorch vocabulary: a purpose-specific set is built from it, never re-typed."""
    vocabulary = PACKAGE / "analysis" / "vocabulary"
    assert _torch_name_collections(vocabulary / "torch_api.py"), "the check finds nothing"
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        # verify/ imports torch modules to time them
        if path.is_relative_to(vocabulary) or relative.startswith("verify/"):
            continue
        assert not _torch_name_collections(path), \
            f"{relative}: a set of torch names belongs in analysis/vocabulary/"


def _concepts() -> dict[str, frozenset[str]]:
    """The vocabulary's sets of unqualified names (tensor methods, layer and class names)."""
    from torchfix_codemods.analysis.vocabulary import tensor_methods, torch_classes

    found: dict[str, frozenset[str]] = {}
    for module in (tensor_methods, torch_classes):
        for name, value in vars(module).items():
            if isinstance(value, frozenset) and value not in found.values() and \
                    not any(v.startswith("torch.") for v in value):
                found[f"{module.__name__.rsplit('.', 1)[1]}.{name}"] = value
    return found


def _strings(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("frozenset", "set") and node.args:
        node = node.args[0]
    if not isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        return set()
    return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _concept_copies(path: Path, concepts: dict[str, frozenset[str]]) -> list[str]:
    """Collections of three or more names at least three quarters of which are one concept
    set of the vocabulary: a copy of it (drifting apart from it), not a set built from it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    candidates = [node for node in ast.walk(tree) if isinstance(node, (ast.Set, ast.Call))]
    candidates += [node.value for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                   and isinstance(node.value, (ast.Tuple, ast.List))]
    candidates += _membership_literals(tree)
    found = set()
    for node in candidates:
        names = _strings(node)
        for concept, members in concepts.items():
            shared = names & members
            if len(shared) >= 3 and 4 * len(shared) >= 3 * len(names):
                found.add(f"{path.name}:{node.lineno} ~ {concept}")
    return sorted(found)


def test_the_vocabulary_of_tensor_methods_is_not_copied() -> None:
    """``{"to", "cuda", "cpu", "float", "half"}`` written out in a fact module drifts from
    ``CHAINABLE_METHODS``; a purpose-specific set is built from the concept sets."""
    vocabulary = PACKAGE / "analysis" / "vocabulary"
    concepts = _concepts()
    assert "tensor_methods.TENSOR_FACTORIES" in concepts
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if path.is_relative_to(vocabulary) or relative.startswith("verify/"):
            continue
        copies = _concept_copies(path, concepts)
        assert not copies, f"{relative}: {copies[0]}: build it from analysis/vocabulary/"


def test_the_copy_check_finds_a_copy(tmp_path: Path) -> None:
    """The two checks above would pass vacuously if they found nothing."""
    copied = tmp_path / "copied.py"
    copied.write_text("def f(name, q):\n    return name in ('to', 'cuda', 'cpu', 'half') or \\\n"
                      "        q in ('torch.cat', 'torch.stack')\n")
    assert _concept_copies(copied, _concepts()) == [
        "copied.py:2 ~ tensor_methods.CONVERSIONS", "copied.py:2 ~ tensor_methods.DEVICE_METHODS",
        "copied.py:2 ~ tensor_methods.TENSOR_ONLY_METHODS",
        "copied.py:2 ~ torch_classes.CHAINABLE_METHODS"]
    assert _torch_name_collections(copied) == ["copied.py:3"]


def test_settings_options_and_cache_key_import_neither_libcst_nor_rules(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from torchfix_codemods.configuration import Configuration\n"
        "from torchfix_codemods.settings import Overrides\n"
        "from torchfix_codemods import cache\n"
        f"settings = Configuration(Overrides(), cwd={str(tmp_path)!r}).settings_for('m.py')\n"
        "cache.cache_key('m.py', b'x = 1\\n', settings.options_for('m.py'))\n"
        "loaded = [m for m in sys.modules if m == 'libcst' or m.startswith('libcst.')"
        " or m.startswith('torchfix_codemods.rules')]\n"
        "print(loaded)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=tmp_path)
    assert result.stdout.strip() == "[]"


def test_the_catalog_lists_every_rule_class_and_nothing_else() -> None:
    assert [(r.code, r.name, r.default_enabled) for r in all_rules()] == [
        (e.code, e.name, e.default_enabled) for e in CATALOG]
    for entry in CATALOG:
        # The rule's module, or a module of its package (a rule split into modules).
        package = f"torchfix_codemods.rules.{entry.module}"
        module = rule_by_code(entry.code).__module__
        assert module == package or module.startswith(package + "."), (entry.code, module)


def test_every_field_of_the_file_options_is_in_the_cache_key() -> None:
    base = FileOptions(codes=("TFC001",))
    changed = [
        dataclasses.replace(base, codes=("TFC002",)),
        dataclasses.replace(base, unsafe_fixes=True),
        dataclasses.replace(base, target_torch=(2, 4)),
        dataclasses.replace(base, rules=RuleOptions(inference_decorators=("my.no_grad",))),
        dataclasses.replace(base, max_nesting_depth=10),
        dataclasses.replace(base, max_file_size=10),
    ]
    assert {f.name for f in dataclasses.fields(FileOptions)} == {
        "codes", "unsafe_fixes", "target_torch", "rules", "max_nesting_depth",
        "max_file_size"}, \
        "a new field needs a case here"
    keys = {cache.cache_key("m.py", b"", options) for options in [base, *changed]}
    assert len(keys) == 1 + len(changed)


def test_rules_read_options_not_settings() -> None:
    for path in _rule_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        reads = [node.lineno for node in ast.walk(tree)
                 if isinstance(node, ast.Attribute) and node.attr in ("settings", "unsafe_fixes")]
        assert not reads, f"{path.name}:{reads[0]} reads the run's settings; rules get " \
                          "context.options, and the engine applies the fix policy"
        assert "torchfix_codemods.settings" not in _imports(path), path.name


CHECKPOINT = "import torch\nfrom torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"


def test_the_engine_picks_the_first_alternative_the_run_allows() -> None:
    """TFC404 offers `use_reentrant=False` (unsafe) before `True` (safe); the rule does not
    know the run's policy."""
    safe = fix_bytes(CHECKPOINT.encode(), ["TFC404"])
    assert safe.fixed is not None and "use_reentrant=True" in safe.fixed
    assert [f.fix.safety for f in safe.findings if f.fix] == [Safety.SAFE]
    unsafe = fix_bytes(CHECKPOINT.encode(), ["TFC404"], unsafe=True)
    assert unsafe.fixed is not None and "use_reentrant=False" in unsafe.fixed
    old = fix_bytes(CHECKPOINT.encode(), ["TFC404"], unsafe=True, target=(1, 10))
    assert old.fixed is None
    [finding] = old.findings
    assert finding.fix is not None and finding.fix.safety is Safety.UNSAFE
    assert finding.fix.withheld == "needs torch >= 1.11, target is older"


class _AsksTheProject(Rule):
    """Reports what the project says about the class a name is bound to."""

    code = "TFC995"
    name = "asks-the-project"
    message = "asked"
    triggers = ("Net",)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualified_name(node.func)
        facts = self.context.project.class_facts(qualified or "")
        self.report(node, f"{qualified}: {facts.is_module if facts else 'unknown'}")


class _Project:
    def module_name(self, path: str) -> str | None:
        return "pkg.train"

    def class_facts(self, qualified: str) -> ClassFacts | None:
        return ClassFacts(qualified, "pkg/models.py", True) if qualified == "pkg.models.Net" else None


def test_project_facts_reach_a_rule_through_its_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "rule_by_code",
                        lambda code: _AsksTheProject if code == "TFC995" else rule_by_code(code))
    unit = SourceUnit("train.py", "import torch\nfrom pkg.models import Net\nnet = Net()\n")
    project: ProjectFacts = _Project()
    told = engine.process(unit, options_for(["TFC995"]), apply_fixes=False, project=project)
    assert [f.message for f in told.findings] == ["pkg.models.Net: True"]
    alone = engine.process(unit, options_for(["TFC995"]), apply_fixes=False)
    assert [f.message for f in alone.findings] == ["pkg.models.Net: unknown"]
    assert NO_PROJECT.module_name("train.py") is None
