""""Is this a torch version check", decided once (analysis/vocabulary/version_checks.py).

The vocabulary is tested here on strings and dotted names; the last test checks that both
parsers read it the same way: a test the compatibility guards (LibCST) take for a version
check is a flag in the project summary (``ast``), and one they do not take is not.
"""

from __future__ import annotations

import libcst as cst
import pytest

from torchfix_codemods.analysis.core.names import NameIndex
from torchfix_codemods.analysis.facts.compat import old_when
from torchfix_codemods.analysis.project.summary import summarize
from torchfix_codemods.analysis.project.values import FLAG
from torchfix_codemods.analysis.vocabulary.version_checks import (
    Operand,
    checks_version,
    comparison_operator,
    requirement,
    requirement_check,
    version_query,
    version_source,
)


def test_a_requirement_string_is_parsed_one_way() -> None:
    found = requirement(" torch >= 2.1 ")
    assert found is not None and (found.package, found.specifier) == ("torch", ">=2.1")
    assert found.operator == ">="
    assert requirement("torchvision<0.15") is not None
    assert requirement("numpy>=1.0") is None and requirement("torch[cuda]>=2") is not None
    assert requirement_check("torch>=2.1") is not None
    assert requirement_check("torch") is None  # installed or not: no version compared
    assert requirement_check("torch~=2.0") is None  # no ordering we can read a direction from
    assert requirement_check("torch<=1.13") is not None


def test_names_that_hold_the_torch_release() -> None:
    assert version_source("torch.__version__") == "`torch.__version__`"
    assert version_source("torch.version.__version__") is not None
    assert version_source("torchvision.__version__") is not None
    assert version_source("utils.TORCH_VERSION") == \
        "`utils.TORCH_VERSION` (named for the torch version)"
    assert version_source("numpy.__version__") is None
    assert version_source("torch.cuda") is None


def test_a_package_manager_asked_for_a_torch_package() -> None:
    assert version_query("importlib.metadata.version", ["torch"])
    assert version_query("pkg_resources.get_distribution", ["torchvision"])
    assert not version_query("importlib.metadata.version", ["numpy"])
    assert not version_query("importlib.metadata.files", ["torch"])


def test_a_version_comparing_call_and_its_direction() -> None:
    lightning = [Operand("torch"), Operand(None, "operator.ge"), Operand("2.0")]
    assert checks_version("lightning_utilities.core.imports.compare_version", lightning)
    assert comparison_operator(lightning) == (1, True)
    assert comparison_operator([Operand("<")]) == (0, False)
    assert comparison_operator([Operand("==")]) == (0, None)
    assert comparison_operator([Operand("torch"), Operand("2.0")]) is None
    assert checks_version("is_torch_version", [Operand("<"), Operand("2.0")])
    assert not checks_version("compare_version", [Operand("numpy"), Operand(">=")])
    assert not checks_version("check_torch", [Operand(">=")])  # not named for a version


@pytest.mark.parametrize(("test", "is_check"), [
    ("torch.__version__ < '2.0'", True),
    ("torchvision.__version__ >= '0.15'", True),
    ("importlib.metadata.version('torch') >= '2.0'", True),
    ("compare_version('torch', operator.ge, '2.0')", True),
    ("RequirementCache('torch>=2.1')", True),
    ("RequirementCache('torch')", False),
    ("RequirementCache('numpy>=1.0')", False),
    ("compare_version('numpy', operator.ge, '1.0')", False),
    ("importlib.metadata.version('numpy') >= '1.0'", False),
])
def test_both_parsers_read_the_same_checks(test: str, is_check: bool) -> None:
    source = ("import importlib.metadata\nimport operator\nimport torch\nimport torchvision\n"
              "from lightning_utilities.core.imports import RequirementCache, compare_version\n"
              f"FLAG = {test}\n")
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    statement = module.body[-1]
    assert isinstance(statement, cst.SimpleStatementLine)
    assignment = statement.body[0]
    assert isinstance(assignment, cst.Assign)
    assert (old_when(names, assignment.value) is not None) is is_check
    assert (summarize(source).names["FLAG"] == FLAG) is is_check
