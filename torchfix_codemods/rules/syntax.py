"""TFC000: a file that does not parse is a finding, never a crash and never silent."""

from __future__ import annotations

from torchfix_codemods.findings import Safety
from torchfix_codemods.prefilter import Needs
from torchfix_codemods.rules.base import Example, Rule


class SyntaxErrorRule(Rule):
    """## What it does
    Reports a file that Python (or LibCST) cannot parse, with the line and
    column of the error. The file is left untouched and every other file is
    still checked.

    ## Why is this bad?
    A file that does not parse cannot be checked or fixed. Python 2 code
    (`print "x"`), merge-conflict markers and half-written edits are the usual
    causes; silently skipping them would hide mistakes in them.

    ## Example
    ```python
    print "loss", loss
    ```

    ## Use instead
    ```python
    print("loss", loss)
    ```

    ## Fix safety
    No fix: a person decides what the code was meant to be.

    ## References
    - [`ast.parse`, the parser the check uses](https://docs.python.org/3/library/ast.html#ast.parse)
    - [Python 3.0: `print` is a function](https://docs.python.org/3/whatsnew/3.0.html#print-is-a-function)
    """

    code = "TFC000"
    name = "syntax-error"
    message = "file cannot be parsed"
    safety = Safety.NONE
    triggers = ()


class AsyncKeywordArgument(Rule):
    """## What it does
    Renames the keyword argument `async=` of `.cuda()`, `.to()`, `.type()` and
    `.copy_()` calls to `non_blocking=`, in a file that does not parse only
    because of it. The file is then checked by every other rule as usual.

    ## Why is this bad?
    `async` is a reserved word since Python 3.7, so torch 0.3 code such as
    `x.cuda(async=True)` is a `SyntaxError`: the script does not start, and
    no other check can read the file. torch 0.4 renamed the argument to
    `non_blocking` with the same meaning.

    ## Example
    ```python
    images = images.cuda(async=True)
    ```

    ## Use instead
    ```python
    images = images.cuda(non_blocking=True)
    ```

    ## Fix safety
    Safe: the original cannot run at all, and `non_blocking=` is what the
    argument has been called since torch 0.4 (`Tensor.cuda`, `Tensor.to`,
    `Tensor.type` and `Tensor.copy_` accept it; on CPU tensors it makes no
    difference to the result). Only those four methods are renamed: an
    `async=` passed to anything else keeps the file's syntax error
    (TFC000), since its new name is unknown. `nn.Module.cuda()` takes neither
    name. The repaired file must compile, or it is left as it was.

    ## References
    - [`torch.Tensor.cuda`](https://docs.pytorch.org/docs/stable/generated/torch.Tensor.cuda.html)
    - [Python 3.7: `async` and `await` are reserved keywords](https://docs.python.org/3/whatsnew/3.7.html#summary-release-highlights)
    """

    code = "TFC004"
    name = "async-keyword-argument"
    message = "`async=` is a syntax error since Python 3.7: use `non_blocking=`"
    safety = Safety.SAFE
    triggers = ("async",)
    needs = Needs.any_of("async")
    uses_torch_names = False
    valid = (
        "import torch\nx = torch.zeros(2).to('cpu', non_blocking=True)\n",
        "async def main():\n    return 1\n",
    )
    invalid = (
        Example(
            "import torch\nx = torch.zeros(2)\ny = x.to('cpu', async=True)\n",
            "import torch\nx = torch.zeros(2)\ny = x.to('cpu', non_blocking=True)\n",
        ),
    )


RULES = [SyntaxErrorRule, AsyncKeywordArgument]
