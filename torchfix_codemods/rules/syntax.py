"""TFC000: a file that does not parse is a finding, never a crash and never silent."""

from __future__ import annotations

from torchfix_codemods.findings import Safety
from torchfix_codemods.rules.base import Rule


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


RULES = [SyntaxErrorRule]
