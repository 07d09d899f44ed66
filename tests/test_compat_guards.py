"""Compatibility guards (analysis/facts/compat.py): code kept for older torch releases gets no
finding and no fix from any rule, through the engine; code that only looks like it does.

The byte-identical fixtures reduced from timm and Lightning live in
tests/fixtures/TFC001|TFC401|TFC406/trap_compat_*.py; here each guard form is checked on
its own, in both directions, with the project seam's version flags.
"""

from __future__ import annotations

import libcst as cst
import pytest
from support import FakeProject, findings, fix_bytes, options_for

from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.facts.compat import guard_of
from torchfix_codemods.analysis.project import (
    NO_PROJECT,
    ProjectFacts,
)
from torchfix_codemods.engine import process
from torchfix_codemods.source import SourceUnit

OLD = "torch.cuda.amp.GradScaler()"
NEW = 'torch.amp.GradScaler("cuda")'


def _guarded_calls(source: str, project: ProjectFacts = NO_PROJECT) -> dict[str, bool]:
    """For each ``torch.cuda.amp.GradScaler()`` / ``torch.amp.GradScaler(...)`` call, in order
    (numbered ``old1``, ``new1``...), whether it lies in a guard."""
    module = cst.parse_module(source)
    names = NameIndex.build(module, project)
    found: dict[str, bool] = {}
    counts = {"old": 0, "new": 0}

    class Visit(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            qualified = names.qualified_name(node.func)
            kind = {"torch.cuda.amp.GradScaler": "old", "torch.amp.GradScaler": "new"}.get(
                qualified or "")
            if kind is not None:
                counts[kind] += 1
                found[f"{kind}{counts[kind]}"] = guard_of(names, node) is not None

    module.visit(Visit())
    return found


GUARDED = [
    # try/except around a newer API
    f"import torch\ntry:\n    s = {NEW}\nexcept AttributeError:\n    s = {OLD}\n",
    f"import torch\ntry:\n    s = {NEW}\nexcept (AttributeError, TypeError) as e:\n    s = {OLD}\n",
    f"import torch\ntry:\n    s = {NEW}\nexcept Exception:\n    s = {OLD}\n",
    # version comparisons, both directions and through names
    f"import torch\nif torch.__version__ >= '2.3':\n    s = {NEW}\nelse:\n    s = {OLD}\n",
    f"import torch\nif torch.__version__ < '2.3':\n    s = {OLD}\nelse:\n    s = {NEW}\n",
    f"import torch\nif '2.3' <= torch.__version__:\n    s = {NEW}\nelse:\n    s = {OLD}\n",
    f"import torch\nfrom packaging import version\n"
    f"if version.parse(torch.__version__) >= version.parse('2.3'):\n    s = {NEW}\nelse:\n"
    f"    s = {OLD}\n",
    f"import torch\nfrom packaging.version import Version\nV = Version(torch.__version__)\n"
    f"def f():\n    return {NEW} if V >= Version('2.3') else {OLD}\n",
    f"import torch\nif not hasattr(torch.amp, 'GradScaler'):\n    s = {OLD}\nelse:\n    s = {NEW}\n",
    f"import torch\nNEW_AMP = hasattr(torch, 'amp')\ns = {NEW} if NEW_AMP else {OLD}\n",
    f"import torch\nfrom detectron2.utils.env import TORCH_VERSION\n"
    f"if TORCH_VERSION >= (2, 3):\n    s = {NEW}\nelse:\n    s = {OLD}\n",
    f"import torch\nimport importlib.metadata\n"
    f"if importlib.metadata.version('torch') >= '2.3':\n    s = {NEW}\nelse:\n    s = {OLD}\n",
    # a flag set by a try/except ImportError around a newer API
    f"import torch\ntry:\n    from torch.func import vmap\n    HAS_FUNC = True\nexcept ImportError:\n"
    f"    HAS_FUNC = False\nif not HAS_FUNC:\n    s = {OLD}\n",
    # two spellings of one call under a condition the analysis does not know
    f"import torch\nfrom somewhere import FLAG\ns = {NEW} if FLAG else {OLD}\n",
]


@pytest.mark.parametrize("source", GUARDED)
def test_the_old_torch_branch_is_guarded_and_the_new_one_is_not(source: str) -> None:
    found = _guarded_calls(source)
    old = [guarded for name, guarded in found.items() if name.startswith("old")]
    new = [guarded for name, guarded in found.items() if name.startswith("new")]
    assert old and all(old), found
    assert not any(new), found


NOT_GUARDED = [
    f"import torch\ns = {OLD}\n",
    f"import torch\ntry:\n    import apex\nexcept ImportError:\n    s = {OLD}\n",
    f"import torch\ntry:\n    s = {NEW}\nexcept ValueError:\n    s = {OLD}\n",
    f"import torch\ntry:\n    s = make()\nexcept Exception:\n    s = {OLD}\n",
    f"import torch\nif args.amp:\n    s = {OLD}\n",
    f"import torch\nif torch.cuda.is_available():\n    s = {OLD}\nelse:\n    s = None\n",
    f"import torch\nimport sys\nif sys.version_info >= (3, 10):\n    s = 1\nelse:\n    s = {OLD}\n",
    f"import torch\nif hasattr(model, 'module'):\n    s = 1\nelse:\n    s = {OLD}\n",
    f"import torch\nfrom somewhere import FLAG\nif FLAG:\n    s = 1\nelse:\n    s = {OLD}\n",
    # the new branch of a version check is not a fallback: code there is still checked
    f"import torch\nif torch.__version__ >= '2.3':\n    s = {OLD}\n",
    # two spellings under a condition that is not a flag: a choice, not a release check
    f"import torch\nif scaler is None:\n    s = {OLD}\nelse:\n    s = {NEW}\n",
    f"import torch\nuse_new = args.new\ns = {NEW} if use_new else {OLD}\n",
]


@pytest.mark.parametrize("source", NOT_GUARDED)
def test_code_that_only_looks_like_a_fallback_is_not_guarded(source: str) -> None:
    found = _guarded_calls(source)
    assert found and not any(found.values()), found


def _flags(flags: dict[str, bool]) -> FakeProject:
    """A project whose index knows which module-level names are torch-version flags."""
    return FakeProject(version_flags=flags)


FLAG = "lightning.fabric.utilities.imports._TORCH_GREATER_EQUAL_2_4"
IMPORTED = "import torch\nfrom lightning.fabric.utilities.imports import _TORCH_GREATER_EQUAL_2_4\n"


def test_an_imported_flag_guards_through_the_project_seam() -> None:
    source = IMPORTED + f"if _TORCH_GREATER_EQUAL_2_4:\n    x = 1\nelse:\n    s = {OLD}\n"
    assert _guarded_calls(source) == {"old1": False}  # without the index: unknown
    assert _guarded_calls(source, _flags({FLAG: True})) == {"old1": True}
    assert _guarded_calls(source, _flags({FLAG: False})) == {"old1": False}


def test_a_project_flag_without_direction_guards_the_branch_without_the_newer_api() -> None:
    source = IMPORTED + f"if _TORCH_GREATER_EQUAL_2_4:\n    s = {NEW}\nelse:\n    s = {OLD}\n"
    assert _guarded_calls(source, _flags({FLAG: True})) == {"new1": False, "old1": True}
    neither = IMPORTED + f"if _TORCH_GREATER_EQUAL_2_4:\n    s = {OLD}\nelse:\n    s = {OLD}\n"
    assert _guarded_calls(neither, _flags({FLAG: True})) == {"old1": True, "old2": True}


def test_a_version_check_function_of_the_project_guards_its_old_branch() -> None:
    source = ("import torch\nfrom accel.utils import torch_ok\n"
              f"if torch_ok('2.3'):\n    s = {NEW}\nelse:\n    s = {OLD}\n")
    assert _guarded_calls(source) == {"new1": False, "old1": False}
    assert _guarded_calls(source, _flags({"accel.utils.torch_ok": True})) == {
        "new1": False, "old1": True}


def test_the_engine_drops_findings_and_fixes_in_guards_for_every_rule() -> None:
    source = ("import torch\n"
              "try:\n"
              "    ckpt = torch.load('m.pt', map_location='cpu', weights_only=True)\n"
              "    s = torch.amp.GradScaler('cuda')\n"
              "except (TypeError, AttributeError):\n"
              "    ckpt = torch.load('m.pt')\n"
              "    s = torch.cuda.amp.GradScaler()\n"
              "    from functorch import vmap\n"
              "    y = torch.randn(3, requires_grad=True).numpy()\n")
    assert findings(source, ["TFC001", "TFC002", "TFC101", "TFC401", "TFC406"]) == []
    result = fix_bytes(source.encode(), ["TFC001", "TFC002", "TFC101", "TFC401", "TFC406"],
                       unsafe=True)
    assert result.new_bytes is None


def test_the_project_flag_reaches_the_engine() -> None:
    source = IMPORTED + f"if _TORCH_GREATER_EQUAL_2_4:\n    x = 1\nelse:\n    s = {OLD}\n"
    unit = SourceUnit.from_bytes("amp.py", source.encode())
    plain = process(unit, options_for(["TFC401"]), apply_fixes=False)
    assert [f.code for f in plain.findings] == ["TFC401"]
    flagged = process(unit, options_for(["TFC401"]), apply_fixes=False,
                      project=_flags({FLAG: True}))
    assert flagged.findings == []


def test_a_keyword_in_one_branch_is_not_a_release_check() -> None:
    """pytorch/examples imagenet/main.py:214: after TFC001 fixed the else branch, the
    if branch (plain `torch.load`) must still get its own fix in the next round."""
    source = ("import torch\n"
              "def resume(args, device):\n"
              "    if args.gpu is None:\n"
              "        checkpoint = torch.load(args.resume)\n"
              "    else:\n"
              "        checkpoint = torch.load(args.resume, map_location=f'cuda:{args.gpu}',\n"
              "                                weights_only=True)\n"
              "    return checkpoint['state_dict']\n")
    assert [f.line for f in findings(source, ["TFC001"])] == [4]
    # unsafe since the project index: what the checkpoint holds is not visible in the run
    fixed = fix_bytes(source.encode(), ["TFC001"], unsafe=True).fixed
    assert fixed is not None and "torch.load(args.resume, weights_only=True)" in fixed


def test_a_fix_that_would_edit_inside_a_guard_is_withdrawn() -> None:
    """A finding outside a guard keeps no fix that replaces a node inside one."""
    from torchfix_codemods.engine import outside_compat_guards
    from torchfix_codemods.findings import Safety
    from torchfix_codemods.rules.base import Fix, NodeFinding
    from torchfix_codemods.rules.numpy_conversion import NumpyOnTensor

    source = f"import torch\nx = 1\ntry:\n    s = {NEW}\nexcept AttributeError:\n    s = {OLD}\n"
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    outside = module.body[1]
    handler_call = module.body[2].handlers[0].body.body[0].body[0].value  # type: ignore[attr-defined]
    inside = Fix(Safety.SAFE, "edits the fallback", [(handler_call, cst.Name("other"))])
    elsewhere = Fix(Safety.SAFE, "edits outside", [(outside, outside)])
    kept = outside_compat_guards(names, [
        NodeFinding(NumpyOnTensor, outside, "m", (inside, elsewhere)),
        NodeFinding(NumpyOnTensor, handler_call, "m", (elsewhere,)),
    ])
    assert len(kept) == 1 and kept[0].fixes == (elsewhere,)
