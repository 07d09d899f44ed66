"""What a project summary says a value is: small tagged types, one per kind of value.

The summary (:mod:`.summary`) evaluates expressions of one file symbolically and the
index (:mod:`.index`) resolves what is left symbolic once files are combined (a parameter
through the calls of its function, an imported name through the file that defines it).
Each kind is a frozen dataclass, so both sides match on types instead of on the first
string of a list, and a value is hashable (kept once in a container).

On disk (the summary cache) a value is the JSON list it has always been, ``[kind, ...]``:
:func:`encode` and :func:`decode` convert at that boundary only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Lit:
    """A number, bool, None or formatted string: loads under ``weights_only=True``."""


@dataclass(frozen=True)
class Str:
    text: str


@dataclass(frozen=True)
class Tensor:
    cpu: bool
    """Known to live on the CPU (``.cpu()``, ``from_numpy``, a factory without ``device``)."""
    detached: bool
    """Known not to require grad (``.detach()``, a factory without ``requires_grad``)."""


@dataclass(frozen=True)
class StateDict:
    """A ``.state_dict()``."""

    scaler: bool
    """A grad scaler's (Python numbers only: nothing on an accelerator)."""


@dataclass(frozen=True)
class Numpy:
    """A numpy array or scalar (what ``np.nanmean`` returns)."""


@dataclass(frozen=True)
class Namespace:
    """An ``argparse.Namespace`` (``parser.parse_args()``)."""


@dataclass(frozen=True)
class Dict:
    values: tuple[Value, ...]


@dataclass(frozen=True)
class Seq:
    items: tuple[Value, ...]
    ordered: bool = False
    """``items`` are the elements in their places (a tuple or list literal without a
    starred element), so ``seq[i]`` is ``items[i]``; else distinct values in any order."""


@dataclass(frozen=True)
class AnyOf:
    """One of several values (a conditional expression, a name bound several times)."""

    options: tuple[Value, ...]


@dataclass(frozen=True)
class Call:
    """What calling ``dotted`` returns (for a class: an instance of it)."""

    dotted: str


@dataclass(frozen=True)
class Item:
    """Element ``index`` of the ``count`` values that calling ``dotted`` returns, unpacked
    (``voc, pairs = readVocs(...)`` with ``return voc, pairs`` in ``readVocs``); ``count``
    -1: read by a subscript (``metrics = f(...)`` then ``metrics[2]``), any length."""

    dotted: str
    index: int
    count: int


@dataclass(frozen=True)
class Param:
    """A parameter of a module-level function or of a method (``Class.method``), resolved
    through the calls of it; ``index`` -1 is its ``**kwargs``."""

    function: str
    index: int
    name: str


@dataclass(frozen=True)
class Ref:
    """A name imported from another module (``dotted`` as the file spells the import)."""

    dotted: str


@dataclass(frozen=True)
class Submodule:
    """What ``nn.Module.apply`` passes to the function it is given."""


@dataclass(frozen=True)
class Version:
    """Torch's version (``torch.__version__`` and values computed from it)."""


@dataclass(frozen=True)
class Flag:
    """A comparison of torch's version."""


@dataclass(frozen=True)
class Cmp:
    """A comparison whose sides include imported names (a flag when one is a version)."""

    refs: tuple[Ref, ...]


@dataclass(frozen=True)
class Flagged:
    """A boolean combination of values that may be flags (decided across files)."""

    values: tuple[Value, ...]


@dataclass(frozen=True)
class Unknown:
    """Nothing the summary can tell."""


Value = (Lit | Str | Tensor | StateDict | Numpy | Namespace | Dict | Seq | AnyOf | Call | Item
         | Param | Ref | Submodule | Version | Flag | Cmp | Flagged | Unknown)

LIT = Lit()
NUMPY = Numpy()
NAMESPACE = Namespace()
SUBMODULE = Submodule()
VERSION = Version()
FLAG = Flag()
UNKNOWN = Unknown()


def encode(value: Value) -> list[Any]:
    """The JSON list of a value (the summary cache's format)."""
    match value:
        case Str(text):
            return ["str", text]
        case Tensor(cpu, detached):
            return ["tensor", "cpu" if cpu else "?", "detached" if detached else "?"]
        case StateDict(scaler):
            return ["sd", "scaler" if scaler else ""]
        case Dict(values):
            return ["dict", [encode(v) for v in values]]
        case Seq(items, ordered):
            return ["seq", [encode(v) for v in items], *([1] if ordered else [])]
        case AnyOf(options):
            return ["any", [encode(v) for v in options]]
        case Call(dotted):
            return ["call", dotted]
        case Item(dotted, index, count):
            return ["item", dotted, index, count]
        case Param(function, index, name):
            return ["param", function, index, name]
        case Ref(dotted):
            return ["ref", dotted]
        case Cmp(refs):
            return ["cmp", [encode(r) for r in refs]]
        case Flagged(values):
            return ["flagged", [encode(v) for v in values]]
    return [_SINGLE_NAMES[type(value)]]


_SINGLES: dict[str, Value] = {"lit": LIT, "numpy": NUMPY, "namespace": NAMESPACE,
                              "submodule": SUBMODULE, "version": VERSION, "flag": FLAG,
                              "unknown": UNKNOWN}
_SINGLE_NAMES = {type(v): k for k, v in _SINGLES.items()}


def decode(data: list[Any]) -> Value:
    """The value of a JSON list written by :func:`encode`."""
    kind = data[0]
    if kind in _SINGLES:
        return _SINGLES[kind]
    if kind == "str":
        return Str(data[1])
    if kind == "tensor":
        return Tensor(data[1] == "cpu", data[2] == "detached")
    if kind == "sd":
        return StateDict(data[1] == "scaler")
    if kind == "dict":
        return Dict(tuple(decode(v) for v in data[1]))
    if kind == "seq":
        return Seq(tuple(decode(v) for v in data[1]), len(data) > 2 and bool(data[2]))
    if kind == "any":
        return AnyOf(tuple(decode(v) for v in data[1]))
    if kind == "call":
        return Call(data[1])
    if kind == "item":
        return Item(data[1], int(data[2]), int(data[3]))
    if kind == "param":
        return Param(data[1], int(data[2]), data[3])
    if kind == "ref":
        return Ref(data[1])
    if kind == "cmp":
        return Cmp(tuple(Ref(r[1]) for r in data[1]))
    if kind == "flagged":
        return Flagged(tuple(decode(v) for v in data[1]))
    return UNKNOWN
