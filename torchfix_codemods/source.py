"""Source units: decoded text with everything needed to write it back byte-exact.

The engine's unit of work is a *source text with a path*, not a file, so that
notebook cells (or stdin) can be units too. Decoding honours PEP 263 cookies
and a UTF-8 BOM; encoding restores both, so bytes outside an edit never change.
"""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass


class UndecodableSource(Exception):
    """The bytes are not text in the encoding the file declares."""


@dataclass(frozen=True)
class SourceUnit:
    path: str
    text: str
    encoding: str = "utf-8"
    bom: bool = False

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> SourceUnit:
        bom = data.startswith(codecs.BOM_UTF8)
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as error:
            raise UndecodableSource(str(error)) from error
        if encoding == "utf-8-sig":
            encoding = "utf-8"
        body = data[len(codecs.BOM_UTF8):] if bom else data
        try:
            text = body.decode(encoding)
        except (UnicodeDecodeError, LookupError) as error:
            raise UndecodableSource(f"cannot decode as {encoding}: {error}") from error
        return cls(path, text, encoding, bom)

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data
