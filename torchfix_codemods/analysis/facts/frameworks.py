"""Which tensor frameworks a file imports: torch, or one whose tensors look like torch's.

``loss.backward()`` and ``model(x)`` mean torch's only in a file that imports
torch; ``t.numpy()`` in a file that imports TensorFlow may be a TensorFlow
tensor, which has ``.numpy()`` and ``.cpu()`` but no ``.detach()``. Both
questions are asked by several rules, and answered once here per module.
"""

from __future__ import annotations

from collections.abc import Iterator

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


def imports_torch(names: NameIndex) -> bool:
    """Whether the file imports the real ``torch`` (``from mylib import torch`` does not count),
    in any scope."""
    if _TORCH in names.memo:
        return names.memo[_TORCH]
    found = any((binding.qualified or "").split(".")[0] == "torch" for binding in _imports(names))
    names.memo[_TORCH] = found
    return found


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
