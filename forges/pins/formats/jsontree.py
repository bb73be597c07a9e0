"""JSON (ECS task definitions, JSON manifests) as a positioned tree.

The standard library's decoder does not report where a value sits, so this is a
small recursive-descent reader over the same grammar; strings are decoded by the
standard library's own `scanstring`, so escapes mean exactly what `json` says.
"""

from __future__ import annotations

import json.decoder
import re
from json.decoder import JSONDecodeError

from forges.pins.formats import BARE, QUOTED, FormatError, Mapping, Node, Scalar, Sequence

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_MAX_DEPTH = 500


def read(text: str) -> list[Node]:
    """The document as a one-element list; FormatError when the text is not JSON."""
    reader = _Reader(text)
    position = reader.skip(1 if text.startswith("\ufeff") else 0)
    node, position = reader.value(position, 0)
    position = reader.skip(position)
    if position != len(text):
        raise FormatError(f"not valid JSON: extra data at offset {position}")
    return [node]


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text

    def skip(self, position: int) -> int:
        match = _WHITESPACE.match(self.text, position)
        return match.end() if match else position

    def fail(self, what: str, position: int) -> FormatError:
        return FormatError(f"not valid JSON: {what} at offset {position}")

    def value(self, position: int, depth: int) -> tuple[Node, int]:
        if depth > _MAX_DEPTH:
            raise self.fail("nesting too deep", position)
        text = self.text
        if position >= len(text):
            raise self.fail("unexpected end", position)
        char = text[position]
        if char == '"':
            return self.string(position)
        if char == "{":
            return self.object(position + 1, depth)
        if char == "[":
            return self.array(position + 1, depth)
        for literal in ("true", "false", "null"):
            if text.startswith(literal, position):
                end = position + len(literal)
                node = None if literal == "null" else Scalar(literal, position, end, BARE, verbatim=True)
                return node, end
        match = _NUMBER.match(text, position)
        if match and match.end() > position:
            return Scalar(match.group(), position, match.end(), BARE, verbatim=True), match.end()
        raise self.fail("unexpected character", position)

    def string(self, position: int) -> tuple[Scalar, int]:
        try:
            # `scanstring` is public at runtime but missing from typeshed.
            value, end = json.decoder.scanstring(self.text, position + 1, True)  # type: ignore[attr-defined]
        except JSONDecodeError as error:
            raise self.fail(error.msg, error.pos) from None
        inner_end = end - 1
        verbatim = self.text[position + 1 : inner_end] == value
        return Scalar(value, position + 1, inner_end, QUOTED, verbatim=verbatim, quote='"'), end

    def object(self, position: int, depth: int) -> tuple[Mapping, int]:
        mapping = Mapping()
        position = self.skip(position)
        if self.text.startswith("}", position):
            return mapping, position + 1
        while True:
            if not self.text.startswith('"', position):
                raise self.fail("expected a key", position)
            key, position = self.string(position)
            position = self.skip(position)
            if not self.text.startswith(":", position):
                raise self.fail("expected ':'", position)
            value, position = self.value(self.skip(position + 1), depth + 1)
            mapping.pairs.append((key.value, value))
            position = self.skip(position)
            if self.text.startswith(",", position):
                position = self.skip(position + 1)
                continue
            if self.text.startswith("}", position):
                return mapping, position + 1
            raise self.fail("expected ',' or '}'", position)

    def array(self, position: int, depth: int) -> tuple[Sequence, int]:
        sequence = Sequence()
        position = self.skip(position)
        if self.text.startswith("]", position):
            return sequence, position + 1
        while True:
            item, position = self.value(position, depth + 1)
            sequence.items.append(item)
            position = self.skip(position)
            if self.text.startswith(",", position):
                position = self.skip(position + 1)
                continue
            if self.text.startswith("]", position):
                return sequence, position + 1
            raise self.fail("expected ',' or ']'", position)
