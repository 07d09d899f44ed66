"""The engine's own import edits give what LibCST's codemod visitors gave, faster.

``edits.import_statements`` replaced ``AddImportsVisitor`` and ``RemoveImportsVisitor`` in
the fix path (they cost about ten times a parse per fix round). Each case below runs both
and compares the code, except where ours keeps an import on purpose (a name it cannot
prove unread), which is asserted on its own.
"""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

from torchfix_codemods.edits.import_statements import (
    add_module_imports,
    handles,
    remove_unused_imports,
)
from torchfix_codemods.edits.references import ImportRemoval

ADD_CASES = [
    "x = 1\n",
    "",
    '"""Doc."""\nx = 1\n',
    '"""Doc."""\n\nimport os\nx = 1\n',
    "import os\nimport sys\n\n\ndef f():\n    pass\n",
    "import os\n# a comment\nx = 1\n",
    "from __future__ import annotations\nimport os\nx = 1\n",
    "import torch\nx = 1\n",
    "import torch.nn\nx = 1\n",
    "import torch as t\nx = 1\n",
    "import os; import sys\nx = 1\n",
    "__strict__ = True\nimport os\nx = 1\n",
    "#!/usr/bin/env python\n# header\nimport os\n\nx = 1\n",
    "import os\nif True:\n    import torch\n",
    "x = 1\nimport torch\n",
    "import os\r\nx = 1\r\n",
    "import os\n",
]


def _libcst_add(source: str, modules: list[str]) -> str:
    context = CodemodContext()
    for module in modules:
        AddImportsVisitor.add_needed_import(context, module)
    return AddImportsVisitor(context).transform_module(cst.parse_module(source)).code


@pytest.mark.parametrize("modules", [["torch"], ["torch", "torch.nn"], ["torch.nn.functional"]])
@pytest.mark.parametrize("source", ADD_CASES)
def test_adding_an_import_matches_libcst(source: str, modules: list[str]) -> None:
    ours = add_module_imports(cst.parse_module(source), modules).code
    assert ours == _libcst_add(source, modules)
    compile(ours, "<ours>", "exec")


REMOVE_CASES = [
    ("from torch.autograd import Variable\nx = 1\n", ImportRemoval("torch.autograd", "Variable")),
    ("from torch.autograd import Variable\nx = Variable(1)\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("from torch.autograd import Variable, grad\nx = grad\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("from torch.autograd import grad, Variable\nx = grad\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("from torch.autograd import (\n    grad,  # keep\n    Variable,  # the wrapper\n)\nx = grad\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("from torch.autograd import (\n    Variable,  # the wrapper\n    grad,\n)\nx = grad\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("from torch.autograd import Variable as V\nx = 1\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("import numpy\nx = 1\n", ImportRemoval("numpy")),
    ("import numpy, os\nx = os.sep\n", ImportRemoval("numpy")),
    ("import os, numpy\nx = os.sep\n", ImportRemoval("numpy")),
    ("import numpy\nx = numpy.zeros(1)\n", ImportRemoval("numpy")),
    ("def f():\n    from torch.autograd import Variable\n    return 1\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("def f():\n    from torch.autograd import Variable\n    return Variable(1)\n",
     ImportRemoval("torch.autograd", "Variable")),
    ('"""Uses Variable."""\nfrom torch.autograd import Variable\nprint("a Variable")\n',
     ImportRemoval("torch.autograd", "Variable")),
    ("from torch.autograd import Variable\n__all__ = ['Variable']\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("from torch.autograd import Variable\ndef f(x: 'Variable'):\n    pass\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("from torch.autograd import Variable\nimport torch\nx = torch.autograd.Variable\n",
     ImportRemoval("torch.autograd", "Variable")),
    ("from .autograd import Variable\nx = 1\n", ImportRemoval("autograd", "Variable")),
    ("from torch.autograd import *\nx = 1\n", ImportRemoval("torch.autograd", "Variable")),
]


def _libcst_remove(source: str, removal: ImportRemoval) -> str:
    context = CodemodContext()
    RemoveImportsVisitor.remove_unused_import(context, removal.module, removal.name)
    return RemoveImportsVisitor(context).transform_module(cst.parse_module(source)).code


@pytest.mark.parametrize(("source", "removal"), REMOVE_CASES)
def test_removing_an_unused_import_matches_libcst(source: str, removal: ImportRemoval) -> None:
    assert handles(removal)
    ours = remove_unused_imports(cst.parse_module(source), [removal]).code
    assert ours == _libcst_remove(source, removal)
    compile(ours, "<ours>", "exec")


def test_a_name_read_in_any_scope_keeps_its_import() -> None:
    """Where a function's own binding shadows the import, LibCST's scopes see the module's
    import unused; ours keeps it (a name it cannot prove unread keeps its import)."""
    source = ("from torch.autograd import Variable\n\n\ndef f():\n    Variable = 1\n"
              "    return Variable\n")
    removal = ImportRemoval("torch.autograd", "Variable")
    assert remove_unused_imports(cst.parse_module(source), [removal]).code == source


def test_dotted_imports_are_left_to_libcst() -> None:
    assert not handles(ImportRemoval("torch.nn"))
    assert handles(ImportRemoval("torch.nn", "functional"))
