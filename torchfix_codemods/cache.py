"""A cache of ``check`` results keyed by file content, tool code and settings.

Re-running ``check`` over an unchanged repository should cost a hash per file.
The key covers everything a result depends on: the file's bytes and path, the
engine's options for that file (:class:`~torchfix_codemods.options.FileOptions`,
every field of it), a fingerprint of the tool's own source (so a
development checkout never serves results of older rules), and, when the file's
rules read other files' facts, the project index's fingerprint for that file.
Only ``check`` reads and writes it: ``fix`` always recomputes before writing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from functools import cache
from pathlib import Path

from torchfix_codemods import __version__
from torchfix_codemods.findings import Finding, FixInfo, Safety
from torchfix_codemods.options import FileOptions
from torchfix_codemods.settings import Settings

CACHE_DIRECTORY = ".torchfix_cache"


@cache
def _tool_fingerprint() -> str:
    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".toml") and path.is_file():
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(path: str, data: bytes, options: FileOptions, project: str = "") -> str:
    """``project``: the project index's fingerprint for this file, when its rules read the
    index (so a change in ``models.py`` invalidates ``train.py``'s result)."""
    digest = hashlib.sha256(_tool_fingerprint().encode())
    digest.update(options.fingerprint().encode())
    digest.update(project.encode())
    digest.update(os.path.abspath(path).encode())
    digest.update(data)
    return digest.hexdigest()


def cache_root(settings: Settings) -> Path:
    """Beside the configuration in force for the file (or the current directory)."""
    return Path(settings.root) / CACHE_DIRECTORY / __version__


def load(root: Path, key: str) -> list[Finding] | None:
    try:
        raw = (root / key[:2] / f"{key}.json").read_text(encoding="utf-8")
        return [_finding(item) for item in json.loads(raw)]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(root: Path, key: str, findings: list[Finding]) -> None:
    """Best effort: a read-only tree or a full disk only means no cache."""
    directory = root / key[:2]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        marker = root.parent / ".gitignore"
        if not marker.exists():
            marker.write_text("# Created by torchfix-codemods\n*\n", encoding="utf-8")
        payload = json.dumps([_plain(f) for f in findings])
        fd, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(payload)
        os.replace(temporary, directory / f"{key}.json")
    except OSError:
        return


def _plain(finding: Finding) -> dict[str, object]:
    data = dataclasses.asdict(finding)
    if finding.fix is not None:
        data["fix"]["safety"] = finding.fix.safety.value
    return data


def _finding(data: dict[str, object]) -> Finding:
    fix = data.get("fix")
    if isinstance(fix, dict):
        data["fix"] = FixInfo(**{**fix, "safety": Safety(fix["safety"])})
    return Finding(**data)  # type: ignore[arg-type]
