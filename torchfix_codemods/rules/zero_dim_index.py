"""TFC105: indexing a 0-dim loss (``loss.data[0]``), which raises since torch 0.4.

Only receivers the shared analysis proves to be 0-dim tensors (a reducing
loss, a full reduction) are rewritten; without that evidence nothing is
reported, since ``x[0]`` on any other tensor is ordinary indexing.
"""

from __future__ import annotations

import libcst as cst

from torchfix_codemods.analysis.core.syntax import is_zero_index
from torchfix_codemods.analysis.facts.tensors import (
    one_element_index_reason,
    scalar_reason,
    whole_reduction_reason,
    zero_dim_index_reason,
)
from torchfix_codemods.edits.expressions import method_call
from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Fix, Rule

_ONE_ELEMENT = ("`.data[0]` of a one-element tensor was a number before torch 0.4 and is a "
                "0-dim tensor now: use `.item()`")


class IndexZeroDim(Rule):
    """## What it does
    Rewrites `loss.data[0]` and `loss[0]` on a 0-dim tensor to `loss.item()`.

    ## Why is this bad?
    Before torch 0.4 a loss was a 1-element tensor; since then it is 0-dim and
    indexing it raises `IndexError: invalid index of a 0-dim tensor`.

    ## Example
    ```python
    print(loss.data[0])
    ```

    ## Use instead
    ```python
    print(loss.item())
    ```

    ## Fix safety
    Safe: only applied where the receiver is known to be 0-dim (the output of
    a reducing loss, `F.*_loss` without `reduction='none'`, a full `.sum()` or
    `.mean()`, arithmetic of these with plain numbers or a negation, or the
    result of a function of this file every `return` of which is one of these:
    `loss = compute_td_loss(batch_size)` in the RL notebooks), where the original
    always raises. Also the accuracy counts of old evaluation loops,
    `num_correct.data[0]` where `num_correct = (pred == y).sum()` or
    `pred.eq(y).cpu().sum()`: `.sum()`/`.mean()` with no argument, with the
    tensor's own `.data`, `.detach()`, `.cpu()` or `.cuda()` in the chain, is
    0-dim for a tensor (and a numpy scalar for an array: `[0]` raises there
    too). The compared values of a count need not be known tensors when one of
    them comes through a tensor's `.data`, `.detach()`, `.cpu()` or `.cuda()`
    (`pred = output.data.max(1)[1]`, then `(pred == y).sum()`). Device and
    dtype moves (`loss.cpu().data[0]`) keep a loss 0-dim, and so does a sum
    from 0 of reduced losses or counts (`loss = 0`, then
    `loss += criterion(output, target[di])` or `loss = loss + ...` in a loop:
    the seq2seq tutorials), scaled by plain numbers or not. A criterion moved
    with `criterion = criterion.cuda()` is still the reducing loss it was built as, and a
    criterion taken as a parameter is one where every call of the function in this file
    passes a reducing one (`evaluate(..., evaluateL2, evaluateL1)`). Elementwise methods
    keep a 0-dim value 0-dim (`c.exp()`, `torch.sum(kld).mul_(-0.5)`; out of place only
    with a number for argument). A value unpacked from a function of this file whose every
    `return` is a tuple with a 0-dim item at its place is 0-dim (`loss, preds, n_correct =
    masked_cross_entropy(...)`), and so is the result of a function of another file of
    the run whose every `return` is a whole reduction scaled by sizes and numbers
    (`nll_gaussian` of NRI's `utils.py`; the project index, `scalar-returns`); where that
    function's reduced value is not known to be a tensor, only `.data[0]` at the call
    shows it is one. `mask.float().sum()` is a tensor's sum: numpy has no `.float()`.
    Without that evidence nothing is reported (a DataFrame's `.sum()` is a
    Series, and its `[0]` is ordinary). The same evidence makes
    `loss.data.cpu().numpy()[0]` safe to rewrite to `loss.data.cpu().item()`:
    the array of a 0-dim tensor is 0-dim, and `[0]` on it raises `IndexError:
    too many indices for array` (measured); the number is a Python float
    where torch 0.3 gave a NumPy float32 of the same value.

    Unsafe: `loss.data[0]` where `loss = criterion(output, target)` and the
    criterion is a parameter or attribute the file does not show being built
    (the call is only *named* like a loss), alone, summed from 0 or divided by the
    batch size (`criterion(outputs, labels) / N`); and a reduced
    loss scaled by an option the file cannot type (`args.content_weight * loss`
    with `args` a parameter: a number in practice), including a function of another
    file that divides its sum by a parameter (`kl_div.sum() / (num_atoms * n)`). A criterion built with
    `reduction='none'` returns a vector, whose `.data[0]` is its first element
    and whose `.item()` raises.

    An attribute of an object of a class of another file of the run is 0-dim where every
    assignment of it in the class's methods is 0-dim or `None` (`net.bbox_loss`, set in
    `forward`), and so is a property of the class returning such attributes (`net.loss`).
    A loss function taken as a parameter (`loss = loss_fn_kd(output, labels, ...)`) is one
    where every call of the function in this file passes a function whose every `return` is
    0-dim, of this file or of another file of the run, or a parameter of the caller passed
    on the same way; as safe as that function's evidence.

    Also unsafe: a value unpacked from a list or tuple a helper returns, or returned by the
    method of the class the call is in (`self._gradient_penalty(...)`, unless a subclass of
    this file overrides it), where a helper returns a reduced loss on one branch and a
    one-element literal on another (`Variable(torch.FloatTensor([0]))`, mask-rcnn's "no ROI"
    branch): `[0]` raises on the first, and `.item()` is the same number on both, but a
    tensor becomes a float there. And a whole `.mean()`/`.sum()` of a value the file cannot
    type, read through `.data` (`d_loss = d_fake.mean() - d_real.mean() + gp`, then
    `d_loss.data[0]`: 0-dim for a tensor, a numpy scalar for an array, and `[0]` raises on
    both), scaled by numbers or by `self.weight` where every `self.weight = ...` of the class
    is a parameter with a numeric default or an option (`self.gamma = config.gamma`).

    Also unsafe, and reported with its own message: `action = q.max(1)[1].data[0]`
    where `q` is a model's output for a batch of one (`state.unsqueeze(0)`, through
    `Variable(...)`): this does not raise, but before torch 0.4 it was a Python
    number (what `env.step` expects) and now it is a 0-dim tensor. `.item()` is
    the number; the fix is unsafe because the output's other dimensions are not
    seen (a `(1, T, C)` output has `T` elements there, and `.item()` raises).

    ## References
    - [`torch.Tensor.item`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.item.html)
    - [PyTorch 0.4.0 migration guide: 0-dimensional (scalar) tensors](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    """

    code = "TFC105"
    name = "index-zero-dim"
    message = "indexing a 0-dim tensor raises `IndexError`: use `.item()`"
    safety = Safety.SAFE
    triggers = ("[0]",)
    needs = Needs.any_of("[0]")
    project_facts = ("module-classes",)
    valid = (
        "import torch\nx = torch.randn(3)\ny = x[0]\n",
        "import torch.nn as nn\ncrit = nn.CrossEntropyLoss(reduction='none')\n"
        "loss = crit(a, b)\nprint(loss.data[0])\n",
    )
    invalid = (
        Example(
            "import torch\nimport torch.nn.functional as F\nloss = F.mse_loss(torch.zeros(2), "
            "torch.ones(2))\nprint(loss.data[0])\n",
            "import torch\nimport torch.nn.functional as F\nloss = F.mse_loss(torch.zeros(2), "
            "torch.ones(2))\nprint(loss.item())\n",
        ),
        Example(
            "import torch\nx = torch.randn(3)\ns = x.sum()\nv = s[0]\n",
            "import torch\nx = torch.randn(3)\ns = x.sum()\nv = s.item()\n",
        ),
    )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not is_zero_index(node):
            return
        parent = self.names.parent(node)
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
                isinstance(parent, cst.AugAssign) and parent.target is node):
            return
        value = node.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                value.func.attr.value == "numpy" and not value.args:
            self._numpy_index(node, value.func.value)
            return
        found = zero_dim_index_reason(self.names, node)
        message = None
        if found is None:
            one = one_element_index_reason(self.names, node)
            if one is None:
                return
            found, message = (one, False), _ONE_ELEMENT
        reason, proven = found
        safety = Safety.SAFE if proven else Safety.UNSAFE
        receiver = node.value
        if isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
            receiver = receiver.value
        new = method_call(receiver, "item").with_changes(lpar=node.lpar, rpar=node.rpar)
        self.report(node, message, fix=Fix(safety, "replace `[0]` with `.item()`", [(node, new)]),
                    reason=reason)


    def _numpy_index(self, node: cst.Subscript, tensor: cst.BaseExpression) -> None:
        """``loss.data.cpu().numpy()[0]``: the 0.3 way to a number through numpy. A 0-dim
        tensor gives a 0-dim array, and ``[0]`` on it raises ``IndexError: too many indices
        for array`` (measured on torch 2.13)."""
        reason = scalar_reason(self.names, tensor) or whole_reduction_reason(self.names, tensor)
        if reason is None:
            return
        if isinstance(tensor, cst.Attribute) and tensor.attr.value == "data":
            tensor = tensor.value  # `.item()` is a number: no graph to step around
        new = method_call(tensor, "item").with_changes(lpar=node.lpar, rpar=node.rpar)
        self.report(node, _NUMPY_INDEX, fix=Fix(Safety.SAFE, "replace `.numpy()[0]` with "
                                                "`.item()`", [(node, new)]), reason=reason)


_NUMPY_INDEX = ("`.numpy()[0]` of a 0-dim tensor raises `IndexError` (a 0-dim array): use "
                "`.item()`")

RULES = [IndexZeroDim]
