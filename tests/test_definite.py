"""Definite assignment (analysis/core/definite.py): which reads may run before their name is bound.

Each case states the Python fact it rests on; the ones marked "runs" are checked by
executing the code, so the analysis is judged by the interpreter, not by itself.
"""

from __future__ import annotations

import libcst as cst
import pytest

from torchfix_codemods.analysis.core.definite import definitely_bound, flow_of
from torchfix_codemods.analysis.core.names import NameIndex

# (name, source, the reads the analysis must call doubtful as {(scope, name): count})
CASES = [
    ("bound later at module level",
     "m = load(f, device)\nif accel:\n    device = 1\n", {("", "device"): 1}),
    ("bound in both branches", "if a:\n    d = 1\nelse:\n    d = 2\nprint(d)\n", {}),
    ("bound in one branch", "if a:\n    d = 1\nprint(d)\n", {("", "d"): 1}),
    ("the other branch raises", "if a:\n    d = 1\nelse:\n    raise E\nprint(d)\n", {}),
    ("local read before assignment",
     "def f():\n    print(d)\n    d = 1\n", {("f.<locals>.", "d"): 1}),
    ("global read from a function defined before it", "def f():\n    print(d)\nd = 1\n", {}),
    ("loop target after a loop that may not run", "for i in xs:\n    pass\nprint(i)\n",
     {("", "i"): 1}),
    ("while True left only by break", "while True:\n    v = g()\n    if v:\n        break\n"
     "print(v)\n", {}),
    ("try import, except assign", "try:\n    import x\nexcept ImportError:\n    x = None\n"
     "print(x)\n", {}),
    ("try import, except pass", "try:\n    import x\nexcept ImportError:\n    pass\nprint(x)\n",
     {("", "x"): 1}),
    ("a builtin rebound later at module level", "print(input)\ninput = 3\n", {}),
    ("class body in order", "class A:\n    a = 1\n    b = a\n", {}),
    ("lambda body runs later", "f = lambda q: q + w\nw = 1\n", {}),
    ("walrus in an if test", "if (n := g()):\n    pass\nprint(n)\n", {}),
    ("with target", "with open(p) as fh:\n    pass\nprint(fh)\n", {}),
    ("deleted", "x = 1\ndel x\nprint(x)\n", {("", "x"): 1}),
    ("match with a wildcard case",
     "match p:\n    case 1:\n        y = 1\n    case _:\n        y = 2\nprint(y)\n", {}),
    ("star import may bind anything", "from m import *\nprint(q)\nq = 1\n", {}),
    ("augmented assignment reads first", "def f():\n    c += 1\n", {("f.<locals>.", "c"): 1}),
    ("comprehension variables", "xs = [y for y in range(3)]\nprint([z for z in xs if z])\n", {}),
    ("except name is deleted after the handler",
     "try:\n    pass\nexcept E as e:\n    pass\nprint(e)\n", {("", "e"): 1}),
    # A module-level name bound only under the __main__ guard does not exist when the file
    # is imported; code defined outside that block may run then (a backbone built by
    # another module). Code defined inside the block runs only as a script.
    ("a function reads a name only the script block binds",
     "def f():\n    return torch.zeros(1)\nif __name__ == '__main__':\n    import torch\n",
     {("f.<locals>.", "torch"): 1}),
    ("a method reads a name only the script block binds",
     "class A:\n    def f(self):\n        return np.e\n"
     "if '__main__' == __name__:\n    import numpy as np\n", {("A.f.<locals>.", "np"): 1}),
    ("the name is also bound outside the script block",
     "def f():\n    return torch\ntorch = 1\nif __name__ == '__main__':\n    import torch\n",
     {}),
    ("a function defined inside the script block",
     "if __name__ == '__main__':\n    import torch\n    def f():\n        return torch\n", {}),
    ("a local of the enclosing function hides the script name",
     "def f(torch):\n    def g():\n        return torch\n    return g\n"
     "if __name__ == '__main__':\n    torch = 1\n", {}),
]


@pytest.mark.parametrize(("name", "source", "doubtful"), CASES, ids=[c[0] for c in CASES])
def test_doubtful_reads(name: str, source: str, doubtful: dict) -> None:
    assert dict(flow_of(source).unbound_reads) == doubtful


RUNS = [
    ("m = load(device)\ndevice = 1\n", "NameError"),
    # imported, not run: __name__ is the module's name, so the guarded import never runs
    ("def f():\n    return torch\nif __name__ == '__main__':\n    import torch\nf()\n",
     "NameError"),
    ("def f():\n    print(d)\n    d = 1\nf()\n", "UnboundLocalError"),
    ("try:\n    pass\nexcept E as e:\n    pass\nprint(e)\n", "NameError"),
    ("if False:\n    d = 1\nprint(d)\n", "NameError"),
]


@pytest.mark.parametrize(("source", "error"), RUNS)
def test_a_doubtful_read_fails_when_the_path_is_taken(source: str, error: str) -> None:
    assert flow_of(source).unbound_reads, "the analysis must doubt this read"
    namespace = {"load": lambda *a: a, "E": Exception, "__name__": "imported"}
    with pytest.raises(NameError) as raised:
        exec(compile(source, "<case>", "exec"), namespace)  # noqa: S102 - the test's own code
    assert type(raised.value).__name__ == error


def _at(source: str, code: str) -> tuple[NameIndex, cst.CSTNode]:
    """The name index of ``source`` and its first expression whose code is ``code``."""
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    found: list[cst.CSTNode] = []

    class _Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.BaseExpression) and not found and \
                    cst.Module([]).code_for_node(node) == code:
                found.append(node)
            return True

    module.visit(_Find())
    return names, found[0]


@pytest.mark.parametrize(("source", "expected"), [
    ("device = 1\nx = load(p)\n", True),
    ("x = load(p)\ndevice = 1\n", False),
    ("if a:\n    device = 1\nx = load(p)\n", False),
    ("if a:\n    device = 1\nelse:\n    device = 2\nx = load(p)\n", True),
    ("def f():\n    return load(p)\ndevice = 1\n", True),  # a global, read when f runs
    ("def f(device):\n    return load(p)\n", True),
    ("def f():\n    x = load(p)\n    device = 1\n", False),
    ("for device in ds:\n    x = load(p)\n", True),
    ("with g() as device:\n    x = load(p)\n", True),
    ("x = [load(p) for device in ds]\n", True),
    ("x = load(p)\n", False),
    ("def f():\n    return load(p)\nif __name__ == '__main__':\n    device = 1\n", False),
    ("if __name__ == '__main__':\n    device = 1\n    def f():\n        return load(p)\n",
     True),
    ("def f():\n    return load(p)\ndevice = 0\nif __name__ == '__main__':\n    device = 1\n",
     True),
])
def test_definitely_bound_at_a_node(source: str, expected: bool) -> None:
    names, node = _at(source, "load(p)")
    assert definitely_bound(names, node, "device") is expected


def test_a_decorated_definition_is_found_by_position() -> None:
    """Both LibCST's range and ast's position of a decorated ``def`` start at ``def``: the
    flow's state there is found (a decorator a fix adds runs at that point)."""
    source = ("try:\n    import torch\nexcept ImportError:\n    torch = None\n"
              "device = 1\n\n\n@deco\ndef f():\n    pass\n")
    module = cst.parse_module(source)
    names = NameIndex.build(module)
    function = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    assert definitely_bound(names, function, "torch")
    assert definitely_bound(names, function, "device")
