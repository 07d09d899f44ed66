"""What an executable fixture promises, read from its syntax tree.

``CONTRACT``, ``EXPECTED_ERROR`` and ``RUN_WITHOUT_CUDA`` are literals, so the
parent process reads them with ``ast.literal_eval`` and never imports the
fixture (which imports torch): the harness decides how to judge a case
before anything runs, and a broken fixture is reported before any subprocess.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from torchfix_codemods.verify.fixtures import FixtureError

CONTRACTS = ("same", "fixes-crash", "intended")
DEFAULT_CONTRACT = "same"
_CONSTANTS = ("CONTRACT", "EXPECTED_ERROR", "RUN_WITHOUT_CUDA")
PerDevice = str | Mapping[str, str]


@dataclass(frozen=True)
class ExpectedError:
    """``"RuntimeError"`` or ``"RuntimeError: Can't call numpy()"``: a class name
    (matched against the raised exception's whole MRO, so subclasses count) and
    an optional substring of its message."""

    name: str
    substring: str | None = None

    @classmethod
    def parse(cls, text: str) -> ExpectedError:
        name, colon, rest = text.partition(":")
        name = name.strip()
        if not name:
            raise ValueError(f"EXPECTED_ERROR {text!r} names no exception class")
        return cls(name, (rest.strip() or None) if colon else None)

    def matches(self, mro: list[str], message: str) -> bool:
        if self.name not in mro:
            return False
        return self.substring is None or self.substring in message

    def __str__(self) -> str:
        return self.name + (f": {self.substring}" if self.substring else "")


@dataclass(frozen=True)
class ExecSpec:
    """The executable part of a fixture: its functions and module-level promises."""

    contract: PerDevice = DEFAULT_CONTRACT
    expected_error: PerDevice | None = None
    run_without_cuda: bool = False
    has_reference: bool = False
    has_prepare: bool = False

    def contract_for(self, device_type: str) -> str:
        """The contract on one device type (``CONTRACT`` may be keyed by device type)."""
        return _per_device(self.contract, device_type, "CONTRACT")

    def expected_error_for(self, device_type: str) -> ExpectedError | None:
        if self.expected_error is None:
            return None
        return ExpectedError.parse(
            _per_device(self.expected_error, device_type, "EXPECTED_ERROR"))


def _per_device(value: PerDevice, device_type: str, name: str) -> str:
    if isinstance(value, str):
        return value
    if device_type in value:
        return value[device_type]
    raise FixtureError(f"{name} has no entry for device type {device_type!r} "
                       f"(it has {', '.join(sorted(value))})")


def read_spec(text: str, where: str = "<fixture>") -> ExecSpec:
    """Parse a fixture's source into an :class:`ExecSpec` (raises :class:`FixtureError`)."""
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise FixtureError(f"{where}: does not parse: {error}") from None
    functions: dict[str, ast.AST] = {}
    constants: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in _CONSTANTS:
                    try:
                        constants[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        raise FixtureError(
                            f"{where}:{node.lineno}: {target.id} must be a literal") from None
    run = functions.get("run")
    if not isinstance(run, ast.FunctionDef):
        raise FixtureError(f"{where}: not executable: no top-level `def run(device)`")
    for name in ("run", "reference", "prepare"):
        node = functions.get(name)
        if isinstance(node, ast.AsyncFunctionDef):
            raise FixtureError(f"{where}: `{name}` must be a plain function, not async")
    contract = constants.get("CONTRACT", DEFAULT_CONTRACT)
    _check_per_device(contract, "CONTRACT", where, allowed=CONTRACTS)
    expected = constants.get("EXPECTED_ERROR")
    if expected is not None:
        _check_per_device(expected, "EXPECTED_ERROR", where, allowed=None)
    without_cuda = constants.get("RUN_WITHOUT_CUDA", False)
    if not isinstance(without_cuda, bool):
        raise FixtureError(f"{where}: RUN_WITHOUT_CUDA must be True or False")
    spec = ExecSpec(
        contract=contract,  # type: ignore[arg-type]
        expected_error=expected,  # type: ignore[arg-type]
        run_without_cuda=without_cuda,
        has_reference="reference" in functions,
        has_prepare="prepare" in functions,
    )
    contracts = {contract} if isinstance(contract, str) else set(contract.values())  # type: ignore[union-attr]
    if "intended" in contracts and not spec.has_reference:
        raise FixtureError(f"{where}: CONTRACT 'intended' needs a `def reference(device)`")
    if "fixes-crash" in contracts and expected is None:
        raise FixtureError(f"{where}: CONTRACT 'fixes-crash' needs EXPECTED_ERROR "
                           "(the error the input raises)")
    return spec


def _check_per_device(value: object, name: str, where: str,
                      allowed: tuple[str, ...] | None) -> None:
    values = [value] if isinstance(value, str) else None
    if isinstance(value, dict):
        if not value or not all(isinstance(key, str) for key in value):
            raise FixtureError(f"{where}: {name} as a dict must map device types to strings")
        values = list(value.values())
    if values is None or not all(isinstance(item, str) for item in values):
        raise FixtureError(f"{where}: {name} must be a string or a dict keyed by device type")
    for item in values:
        if allowed is not None and item not in allowed:
            raise FixtureError(f"{where}: {name} {item!r} is not one of {', '.join(allowed)}")
        if allowed is None:
            try:
                ExpectedError.parse(item)
            except ValueError as error:
                raise FixtureError(f"{where}: {error}") from None
