"""Exact comparison of two fixture results, with a path to every difference.

"Same" means bitwise for a safe rewrite: equal dtype, device, shape and
``requires_grad``, and equal bits except that NaN equals NaN (so ``-0.0`` and
``0.0`` differ, as they can behave differently downstream). Python floats are
compared the same way, ``1`` and ``1.0`` differ by type, and containers must
agree on type, keys (and their order) and length.

torch and numpy are never imported here: a tensor can only be in a result if
unpickling it already imported torch, so ``sys.modules`` is asked instead.
"""

from __future__ import annotations

import math
import sys
from typing import Any

MAX_REPORTS = 20


def compare(
    before: Any, after: Any, path: str = "result", labels: tuple[str, str] = ("before", "after"),
) -> list[str]:
    """Every difference between ``before`` and ``after`` as ``"<path>: <what differs>"``."""
    found: list[str] = []
    _Comparer(labels, found).walk(before, after, path)
    if len(found) > MAX_REPORTS:
        found[MAX_REPORTS:] = [f"... and {len(found) - MAX_REPORTS} more differences"]
    return found


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(value: Any) -> str:
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _format_diff(value: float) -> str:
    return format(value, ".3g")


class _Comparer:
    def __init__(self, labels: tuple[str, str], found: list[str]) -> None:
        self.a_label, self.b_label = labels
        self.found = found

    def differ(self, path: str, what: str, a: object, b: object) -> None:
        self.found.append(f"{path}: {what} differs ({self.a_label} {a}, {self.b_label} {b})")

    def walk(self, a: Any, b: Any, path: str) -> None:
        if len(self.found) > MAX_REPORTS:
            return
        if type(a) is not type(b):
            self.differ(path, "type", _type_name(a), _type_name(b))
            return
        torch = sys.modules.get("torch")
        numpy = sys.modules.get("numpy")
        if torch is not None and isinstance(a, torch.Tensor):
            self.tensor(a, b, path, torch)
        elif numpy is not None and isinstance(a, (numpy.ndarray, numpy.generic)):
            self.array(numpy.asarray(a), numpy.asarray(b), path, numpy)
        elif isinstance(a, dict):
            self.mapping(a, b, path)
        elif isinstance(a, (list, tuple)):
            if len(a) != len(b):
                self.differ(path, "length", len(a), len(b))
                return
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                self.walk(x, y, f"{path}[{index}]")
        elif isinstance(a, float):
            if not _same_float(a, b):
                self.found.append(f"{path}: values differ ({self.a_label} {a!r}, "
                                  f"{self.b_label} {b!r}, abs diff {_format_diff(abs(a - b))})")
        elif isinstance(a, complex):
            if not (_same_float(a.real, b.real) and _same_float(a.imag, b.imag)):
                self.differ(path, "value", repr(a), repr(b))
        else:
            try:
                equal = bool(a == b)
            except Exception:  # noqa: BLE001 - an object whose == cannot say
                equal = a is b
            if not equal:
                self.differ(path, "value", _short(a), _short(b))

    def mapping(self, a: dict[Any, Any], b: dict[Any, Any], path: str) -> None:
        missing = [key for key in a if key not in b]
        extra = [key for key in b if key not in a]
        for key in missing:
            self.found.append(f"{path}: key {key!r} missing ({self.b_label} lacks it)")
        for key in extra:
            self.found.append(f"{path}: key {key!r} missing ({self.a_label} lacks it)")
        if not missing and not extra and list(a) != list(b):
            self.differ(path, "key order", list(a), list(b))
        for key in a:
            if key in b:
                self.walk(a[key], b[key], f"{path}[{key!r}]")

    def tensor(self, a: Any, b: Any, path: str, torch: Any) -> None:
        for what, get in (("device", lambda t: t.device), ("dtype", lambda t: t.dtype),
                          ("layout", lambda t: t.layout), ("shape", lambda t: tuple(t.shape)),
                          ("requires_grad", lambda t: t.requires_grad)):
            if get(a) != get(b):
                self.differ(path, what, get(a), get(b))
                return
        if a.device.type == "meta":
            return  # no values to compare
        try:
            if a.layout != torch.strided:
                a, b = a.to_dense(), b.to_dense()
            if a.is_quantized:
                a, b = a.int_repr(), b.int_repr()
            a, b = a.detach().resolve_conj().resolve_neg(), b.detach().resolve_conj().resolve_neg()
            if a.is_complex():
                a, b = torch.view_as_real(a), torch.view_as_real(b)
            if not a.is_floating_point():
                if not torch.equal(a, b):
                    count = int((a != b).sum())
                    diff = ""
                    if a.dtype != torch.bool:
                        diff = f"max abs diff {_format_diff(float((a.double() - b.double()).abs().max()))}, "
                    self.found.append(f"{path}: values differ ({diff}{count} of {a.numel()} elements)")
                return
            self.float_tensor(a, b, path, torch)
        except Exception as error:  # noqa: BLE001 - exotic tensors: fall back to torch.equal
            if not torch.equal(a, b):
                self.found.append(f"{path}: values differ (torch.equal is False; "
                                  f"detail unavailable: {type(error).__name__})")

    def float_tensor(self, a: Any, b: Any, path: str, torch: Any) -> None:
        a_nan, b_nan = torch.isnan(a), torch.isnan(b)
        if not torch.equal(a_nan, b_nan):
            count = int((a_nan != b_nan).sum())
            self.found.append(f"{path}: NaN positions differ ({count} of {a.numel()} elements)")
            return
        keep = ~a_nan
        x, y = a[keep], b[keep]
        if not torch.equal(x, y):
            diff = float((x.double() - y.double()).abs().max())
            count = int((x != y).sum())
            self.found.append(f"{path}: values differ (max abs diff {_format_diff(diff)}, "
                              f"{count} of {a.numel()} elements)")
        elif not torch.equal(torch.signbit(x), torch.signbit(y)):
            count = int((torch.signbit(x) != torch.signbit(y)).sum())
            self.found.append(f"{path}: values differ in the sign of zero "
                              f"({count} of {a.numel()} elements)")

    def array(self, a: Any, b: Any, path: str, numpy: Any) -> None:
        for what, get in (("dtype", lambda x: x.dtype), ("shape", lambda x: x.shape)):
            if get(a) != get(b):
                self.differ(path, what, get(a), get(b))
                return
        if a.dtype.kind in "fc":
            if a.dtype.kind == "c":
                a, b = numpy.stack([a.real, a.imag]), numpy.stack([b.real, b.imag])
            a_nan, b_nan = numpy.isnan(a), numpy.isnan(b)
            if not numpy.array_equal(a_nan, b_nan):
                self.found.append(f"{path}: NaN positions differ "
                                  f"({int((a_nan != b_nan).sum())} of {a.size} elements)")
                return
            x, y = a[~a_nan], b[~a_nan]
            if not numpy.array_equal(x, y):
                diff = float(numpy.max(numpy.abs(x.astype(numpy.float64) - y.astype(numpy.float64))))
                self.found.append(f"{path}: values differ (max abs diff {_format_diff(diff)}, "
                                  f"{int((x != y).sum())} of {a.size} elements)")
            elif not numpy.array_equal(numpy.signbit(x), numpy.signbit(y)):
                self.found.append(f"{path}: values differ in the sign of zero")
            return
        try:
            equal = bool(numpy.array_equal(a, b))
        except Exception:  # noqa: BLE001 - object arrays with odd elements
            equal = False
        if not equal:
            self.found.append(f"{path}: values differ")


def _same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
