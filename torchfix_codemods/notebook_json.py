"""A notebook's JSON text with some cells' ``source`` replaced, every other byte as it was.

Dumping the whole document again would rewrite what the fix never touched: a
tab-indented notebook collapses to spaces, CRLF becomes LF, ``\\u00e9`` escapes
become raw UTF-8, compact separators gain spaces. A migration's pull request
would then show every cell as changed. So the text is scanned once for where each
cell's ``source`` value lies, and only the changed values are written anew, in
the layout the file's own source lists use:

* the whitespace after ``[``, between items and before ``]`` is taken from the
  value being replaced (or, for an empty list, from the file's indentation and
  line ending);
* a line the fix did not change keeps its JSON text as the file had it;
* new strings are escaped as the file escapes them: ``\\uXXXX`` for non-ASCII when
  the file escapes non-ASCII and holds no raw non-ASCII text, raw UTF-8 otherwise.

When the text cannot be scanned (duplicate keys, a layout this module does not
know), the document is dumped whole as before: the content is right either way.
"""

from __future__ import annotations

import json
import re
from typing import Any

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_ESCAPED_NON_ASCII = re.compile(r"(?<!\\)\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])")


class _Unscannable(Exception):
    """The text is not laid out as this scanner expects."""


def render_sources(raw: str, document: dict[str, Any], changed: dict[int, str | list[str]],
                   indent: int | None) -> bytes:
    """``raw`` with the ``source`` of each cell in ``changed`` (by index) replaced."""
    if not changed:
        return raw.encode("utf-8")
    try:
        spans = source_spans(raw)
        if any(index not in spans for index in changed):
            raise _Unscannable
    except (_Unscannable, ValueError):
        return _dumped(document, changed, indent)
    ascii_only = bool(_ESCAPED_NON_ASCII.search(raw)) and raw.isascii()
    pieces = []
    position = 0
    for index in sorted(changed):
        start, end = spans[index]
        pieces.append(raw[position:start])
        pieces.append(dump_source(changed[index], raw, start, end, ascii_only))
        position = end
    pieces.append(raw[position:])
    return "".join(pieces).encode("utf-8")


def _dumped(document: dict[str, Any], changed: dict[int, str | list[str]],
            indent: int | None) -> bytes:
    copy = json.loads(json.dumps(document))
    for index, source in changed.items():
        copy["cells"][index]["source"] = source
    return (json.dumps(copy, indent=indent, ensure_ascii=False) + "\n").encode("utf-8")


def source_spans(raw: str) -> dict[int, tuple[int, int]]:
    """Cell index -> (start, end) of that cell's ``source`` value in ``raw``."""
    spans: dict[int, tuple[int, int]] = {}
    position = _skip(raw, 0)
    for key, start in _members(raw, position):
        if key != "cells":
            continue
        if raw[start] != "[":
            raise _Unscannable
        for index, cell_start in enumerate(_items(raw, start)):
            if raw[cell_start] != "{":
                continue
            for cell_key, value_start in _members(raw, cell_start):
                if cell_key == "source":
                    if index in spans:
                        raise _Unscannable  # a duplicate key: which one JSON keeps is not ours
                    spans[index] = (value_start, _end_of(raw, value_start))
    return spans


def _skip(raw: str, position: int) -> int:
    return _WHITESPACE.match(raw, position).end()  # type: ignore[union-attr]


def _end_of(raw: str, position: int) -> int:
    return _DECODER.raw_decode(raw, position)[1]


def _members(raw: str, position: int):  # noqa: ANN202 - a generator of (key, value start)
    """An object's keys and where each value starts; ``position`` is at its ``{``."""
    if raw[position] != "{":
        raise _Unscannable
    position = _skip(raw, position + 1)
    if raw[position] == "}":
        return
    while True:
        if raw[position] != '"':
            raise _Unscannable
        key, position = json.decoder.scanstring(raw, position + 1)  # type: ignore[attr-defined]
        position = _skip(raw, position)
        if raw[position] != ":":
            raise _Unscannable
        value = _skip(raw, position + 1)
        yield key, value
        position = _skip(raw, _end_of(raw, value))
        if raw[position] == "}":
            return
        if raw[position] != ",":
            raise _Unscannable
        position = _skip(raw, position + 1)


def _items(raw: str, position: int):  # noqa: ANN202 - a generator of item starts
    """Where each item of the array at ``position`` (its ``[``) starts."""
    position = _skip(raw, position + 1)
    if raw[position] == "]":
        return
    while True:
        yield position
        position = _skip(raw, _end_of(raw, position))
        if raw[position] == "]":
            return
        if raw[position] != ",":
            raise _Unscannable
        position = _skip(raw, position + 1)


def dump_source(source: str | list[str], raw: str, start: int, end: int,
                ascii_only: bool) -> str:
    """``source`` as JSON in the layout of the value at ``raw[start:end]``."""
    if isinstance(source, str):
        return json.dumps(source, ensure_ascii=ascii_only)
    spelled = _spellings(raw, start, end)
    items = [spelled.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in source]
    if not items:
        return "[]"
    opening, separator, closing = _list_layout(raw, start, end)
    return "[" + opening + separator.join(items) + closing + "]"


def _spellings(raw: str, start: int, end: int) -> dict[str, str]:
    """Each line of the list at ``raw[start:end]`` -> its JSON text there: a line the fix did
    not change is written back as the file spelled it (``\\u00E9``, ``\\/``, whatever the
    writer chose), so that only the fixed lines of a cell differ."""
    if not raw.startswith("[", start):
        return {}
    spelled: dict[str, str] = {}
    for position in _items(raw, start):
        token_end = _end_of(raw, position)
        value = json.loads(raw[position:token_end])
        if isinstance(value, str):
            spelled.setdefault(value, raw[position:token_end])
    return spelled


def _list_layout(raw: str, start: int, end: int) -> tuple[str, str, str]:
    """(after ``[``, between items, before ``]``) as the list at ``raw[start:end]`` has them."""
    old = raw[start:end]
    if old.startswith("[") and old[1:].strip() not in ("", "]"):
        positions = list(_items(raw, start))
        opening = raw[start + 1:positions[0]]
        last_end = _end_of(raw, positions[-1])
        closing = raw[last_end:end - 1]
        if len(positions) > 1:
            first_end = _end_of(raw, positions[0])
            return opening, raw[first_end:positions[1]], closing
        return opening, "," + (opening if "\n" in opening else " " if ", " in raw else ""), closing
    # An empty list, or a string before: lay it out as the file lays out its other lines.
    newline = "\r\n" if "\r\n" in raw else "\n"
    if "\n" not in raw:
        return "", ", " if re.search(r'", "', raw) else ",", ""
    line_start = raw.rfind("\n", 0, start) + 1
    key_indent = raw[line_start:_skip_blanks(raw, line_start)]
    unit = _indent_unit(raw)
    return newline + key_indent + unit, "," + newline + key_indent + unit, newline + key_indent


def _skip_blanks(raw: str, position: int) -> int:
    while position < len(raw) and raw[position] in " \t":
        position += 1
    return position


def _indent_unit(raw: str) -> str:
    """The file's indentation step: the leading whitespace of its second line."""
    second = raw.split("\n", 2)[1] if raw.count("\n") >= 1 else ""
    return second[: len(second) - len(second.lstrip(" \t"))] or " "
