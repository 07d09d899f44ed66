"""Which tensor frameworks a file imports: torch, or one whose tensors look like torch's.

``loss.backward()`` and ``model(x)`` mean torch's only in a file that imports
torch; ``t.numpy()`` in a file that imports TensorFlow may be a TensorFlow
tensor, which has ``.numpy()`` and ``.cpu()`` but no ``.detach()``. Both
questions are asked by several rules, and answered once here per module.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchfix_codemods.analysis.core.memo import Slot
from torchfix_codemods.analysis.core.names import Binding, NameIndex

FOREIGN_FRAMEWORKS = {
    "tensorflow": "TensorFlow", "keras": "Keras", "tf_keras": "Keras", "jax": "JAX",
    "flax": "JAX", "paddle": "Paddle", "mindspore": "MindSpore", "mxnet": "MXNet",
}
"""Top-level packages whose tensors a torch rule must not rewrite, with a name for the reason."""


def _imports(names: NameIndex) -> Iterator[Binding]:
    for scope in names.all_scopes:
        for bindings in scope.bindings.values():
            for binding in bindings:
                if binding.kind == "import" and binding.qualified:
                    yield binding


_TORCH: Slot[bool] = Slot("frameworks.torch")
_FOREIGN: Slot[str | None] = Slot("frameworks.foreign")
_FOREIGN_SCOPES: Slot[dict[int, str]] = Slot("frameworks.foreign_scopes")


def imports_torch(names: NameIndex) -> bool:
    """Whether the file imports the real ``torch`` (``from mylib import torch`` does not count),
    in any scope."""
    if _TORCH in names.memo:
        return names.memo[_TORCH]
    found = any((binding.qualified or "").split(".")[0] == "torch" for binding in _imports(names))
    names.memo[_TORCH] = found
    return found


def imports_package(names: NameIndex, package: str) -> bool:
    """Does the file import the top-level ``package`` (anywhere in it)?"""
    return any((binding.qualified or "").lstrip(".").split(".")[0] == package
               for binding in _imports(names))


def foreign_framework(names: NameIndex) -> str | None:
    """``"TensorFlow"`` when the file imports it (or Keras, JAX, Paddle...), else None.

    When several are imported, the last one in the file names the reason.
    """
    if _FOREIGN in names.memo:
        return names.memo[_FOREIGN]
    found: str | None = None
    for binding in _imports(names):
        top = (binding.qualified or "").lstrip(".").split(".")[0]
        if top in FOREIGN_FRAMEWORKS:
            found = FOREIGN_FRAMEWORKS[top]
    names.memo[_FOREIGN] = found
    return found


def foreign_framework_at(names: NameIndex, node: cst.CSTNode) -> str | None:
    """Like :func:`foreign_framework`, for one expression: only imports the expression can
    see count. An ``import tensorflow as tf`` inside one function (BEGAN's ``__init__``,
    which imports it to write TensorBoard summaries) makes no value of another function a
    TensorFlow tensor: such a value is built from names that function can reach, and what
    crosses over (a returned value, an attribute) is followed to its TensorFlow call,
    which is no tensor evidence. Imports at module level, or in a function or class the
    expression is in, count."""
    scopes = names.memo.get(_FOREIGN_SCOPES)
    if scopes is None:
        scopes = {}
        for scope in names.all_scopes:
            for bindings in scope.bindings.values():
                for binding in bindings:
                    top = (binding.qualified or "").lstrip(".").split(".")[0]
                    if binding.kind == "import" and binding.qualified and \
                            top in FOREIGN_FRAMEWORKS:
                        scopes[id(scope.node)] = FOREIGN_FRAMEWORKS[top]
        names.memo[_FOREIGN_SCOPES] = scopes
    if not scopes:
        return None
    if names.module_scope is not None and id(names.module_scope.node) in scopes:
        return scopes[id(names.module_scope.node)]
    for ancestor in (node, *names.ancestors(node)):
        if id(ancestor) in scopes:
            return scopes[id(ancestor)]
    return None
