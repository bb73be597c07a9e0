"""Decoding untrusted JSON and YAML without unbounded recursion: the sources' one decoder.

The JSON and YAML decoders recurse once per level of nesting, so a hostile object nested a
thousand levels deep raises RecursionError (or worse) inside them. Depth is therefore
measured before decoding, without recursion; a part nested deeper than MAX_DEPTH is replaced
by a marker (`holds_cut` finds it), and the sources skip the objects holding it by name
(`too_deep_warning`). Text no database column can store (NUL, lone surrogates) is made
storable while decoding (`gitops.rawobjects.storable_text`).
"""

from __future__ import annotations

import gc
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import accumulate
from typing import Any

import yaml

from gitops.rawobjects import MAX_DEPTH, as_str, dig, storable_text

_JSON_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_JSON_TOKENS = re.compile(_JSON_STRING + r"|[\[\]{}]", re.DOTALL)
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
_STEPS = [0] * 256
# For `valid_json_nests_deeper`: both kinds of bracket as one (valid JSON never mixes a pair).
_BRACKETS_AND_QUOTES = bytes.maketrans(b"{}", b"[]")
# For a valid text holding backslashes: what may follow a backslash in JSON besides a quote and a
# backslash, each kept as one letter "e" (so that every backslash stays next to what it escapes),
# and every other byte but quotes, brackets and backslashes dropped.
_ESCAPED_LETTERS = b"/bfnrtu"
_ESCAPES_KEPT = bytes.maketrans(b"{}" + _ESCAPED_LETTERS, b"[]" + b"e" * len(_ESCAPED_LETTERS))
_NOT_STRUCTURE_OR_ESCAPE = bytes(c for c in range(256) if c not in b'"[]{}\\' + _ESCAPED_LETTERS)
# One backslash in this many bytes or more: cheaper translated first than cut out by the regex.
_DENSE_ESCAPES = 64
_ESCAPE = re.compile(rb"\\.", re.DOTALL)  # an escape: the backslash and the character it escapes
_STEPS[ord("[")] = _STEPS[ord("{")] = 1
_STEPS[ord("]")] = _STEPS[ord("}")] = -1
_TOO_DEEP = "\u0000gitops: nested too deep"
_TOO_DEEP_JSON = json.dumps(_TOO_DEEP)


def json_nests_deeper(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether a JSON text nests arrays/objects more than `limit` levels (strings ignored)."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    # Escaped backslashes, then escaped quotes out (left to right, as a decoder pairs
    # them); then everything but quotes and brackets; then every other run between quotes
    # (the strings' contents). What is left is the bracket structure, found in C passes.
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = b"".join(unescaped.translate(None, _NOT_STRUCTURE).split(b'"')[::2])
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    return max(accumulate(map(_STEPS.__getitem__, brackets))) > limit


def cut_too_deep(text: str, limit: int = MAX_DEPTH) -> str:
    """The JSON text with every array/object below `limit` levels replaced by a marker."""
    parts: list[str] = []
    depth = 0
    kept_from = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if depth == limit + 1:
                parts.append(text[kept_from : match.start()])
        else:
            if depth == limit + 1:
                parts.append(_TOO_DEEP_JSON)
                kept_from = match.end()
            depth -= 1
    if depth > limit:  # never closed: the decoder reports the text as truncated
        parts.append(_TOO_DEEP_JSON)
        kept_from = len(text)
    parts.append(text[kept_from:])
    return "".join(parts)


# Escapes of NUL or of a surrogate (half of a pair, or alone), and raw NUL bytes: only a
# text holding one of these is walked for text no database column can store. "\\ud"/"\\uD"
# also match the escapes of U+D000-U+D7FF, which are not surrogates, and an escaped
# backslash before a literal "u0000", which only costs that text a walk. One search for the
# escapes (the regex engine skips to each backslash-u) and one memchr for the byte: a sixth
# of four substring searches, measured by bench/parse_depth.py.
_UNSTORABLE_ESCAPE = re.compile(rb"\\u(?:0000|[dD])")


def may_hold_unstorable(data: bytes) -> bool:
    """Whether a JSON text may hold text no database column can store (then walked for it)."""
    return b"\x00" in data or _UNSTORABLE_ESCAPE.search(data) is not None

_UNSTORABLE_YAML = ("\\0", "\\x00", "\\u", "\\U")


# The decoder's own recursion guard is trusted only under a sane recursion limit: raised
# far, json.loads could exhaust the C stack before it says RecursionError.
_TRUSTED_RECURSION_LIMIT = 10_000


def valid_json_nests_deeper(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """`json_nests_deeper` for a text json.loads has accepted (balanced, well formed), in
    fewer passes over fewer bytes.

    In a valid text a backslash only ever escapes the one character after it. A text with a
    few escapes has them cut out in one regex pass; then every byte but quotes and brackets is
    dropped (one translate), and the quotes left pair up as strings. A text dense with escapes
    (kubectl's last-applied copy is JSON quoted inside JSON) is translated first instead, the
    characters a backslash may escape kept beside it as one letter, and the escapes are
    removed from that shorter text, left to right as a decoder pairs them (escaped
    backslashes, then escaped quotes, then the rest).

    Strings without a bracket reduce to an empty pair of quotes, dropped in one replace, so
    only the few strings that hold brackets are split out. Then each round of removing empty
    pairs peels exactly one level off every branch, so a text empty after `r` rounds nests
    `r` deep. Rounds are cheap while the text shrinks; a deep remainder is measured in one
    pass. Cost: an eighth to a quarter of the decode it guards on a list without escapes
    (bench/parse_depth.py), two thirds on a Deployment list dense with kubectl's copies."""
    if len(data) <= 2 * limit:  # every level takes a pair of brackets
        return False
    if b"\\" in data:
        if data.count(b"\\") * _DENSE_ESCAPES >= len(data):
            escapes = data.translate(_ESCAPES_KEPT, _NOT_STRUCTURE_OR_ESCAPE)
            return _nests_deeper(escapes.replace(b"\\\\", b"").replace(b'\\"', b"").replace(b"\\e", b"")
                                 .translate(None, b"e"), limit)
        data = _ESCAPE.sub(b"", data)
    return _nests_deeper(data.translate(_BRACKETS_AND_QUOTES, _NOT_STRUCTURE), limit)


def _nests_deeper(structure: bytes, limit: int) -> bool:
    """`valid_json_nests_deeper` of the text reduced to its quotes and brackets (both kinds as one)."""
    if structure.count(b"[") <= limit:
        return False
    structure = structure.replace(b'""', b"")
    if b'"' in structure:
        structure = b"".join(structure.split(b'"')[::2])
    rounds = min(limit, 32)
    for _ in range(rounds):
        if not structure:
            return False
        structure = structure.replace(b"[]", b"")
    if not structure:
        return False
    return max(accumulate(map(_STEPS.__getitem__, structure))) > limit - rounds


def load_json(data: bytes) -> tuple[Any, bool]:
    """The decoded JSON text, and whether parts nested too deep were cut out of it.

    The plain decoder first (in C): a text nested deeper than it may recurse raises
    RecursionError, and one it accepted is measured for depth on its (now known valid)
    bytes; only a text too deep either way takes the bounded path, which cuts the deep
    parts out before decoding."""
    with collector_paused():
        return _decode_json(data)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for a while: while a text is decoded, and around a whole poll
    (gitops.polling.poll). Decoding allocates one container per JSON object and array, and every
    few hundred allocations the collector would walk the young objects, and often all the
    process's older ones: measured, that doubled the cost of decoding a cluster's lists.

    Paused around the decoding only, the collector ran at the first allocation after it, while
    the decoded objects were still alive, and walked all of them (then again as they aged):
    11 % of a poll worker's samples in the 1,000-cluster bench were that walk. Around a whole
    poll, it runs once the poll's objects are freed, and finds only what outlived it. Decoded
    JSON holds no reference cycle; what else a poll makes in cycles waits until the poll ends."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _decode_json(data: bytes) -> tuple[Any, bool]:
    decoded: Any = None
    if sys.getrecursionlimit() <= _TRUSTED_RECURSION_LIMIT:
        try:
            decoded = json.loads(data)
        except RecursionError:
            decoded = None
        else:
            if valid_json_nests_deeper(data):
                decoded = None
            else:
                if may_hold_unstorable(data):
                    storable_text(decoded)
                return decoded, False
    if not json_nests_deeper(data):
        decoded, cut = json.loads(data), False
    else:
        decoded, cut = json.loads(cut_too_deep(data.decode("utf-8"))), True
    if may_hold_unstorable(data):
        storable_text(decoded)
    return decoded, cut


def holds_cut(value: Any) -> bool:
    """Whether a decoded value holds a part cut for being too deep (walked without recursion)."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
        elif current == _TOO_DEEP:
            return True
    return False


def _describe(obj: Any) -> str:
    kind = as_str(dig(obj, "kind")) or "object"
    namespace = as_str(dig(obj, "metadata", "namespace"))
    name = as_str(dig(obj, "metadata", "name")) or "<no name>"
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def too_deep_warning(where: str, obj: Any) -> str:
    return f"{where}: skipped {_describe(obj)}: nested deeper than {MAX_DEPTH} levels"


_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class PlainLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML without timestamp parsing: objects must look like the API's JSON (strings)."""


PlainLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in PlainLoader.yaml_implicit_resolvers.items()
}


def yaml_too_deep(text: str, limit: int = MAX_DEPTH) -> int:
    """The number (from 1) of the first YAML document nested deeper than `limit`, or 0.

    An alias counts as deep as the node it names, so anchors cannot stack depth.
    """
    heights: dict[str, int] = {}  # anchor -> levels of the node it names
    open_: list[list[Any]] = []  # per open collection: [anchor, its level, deepest level within]
    document = 0
    for event in yaml.parse(text, Loader=PlainLoader):
        if isinstance(event, yaml.DocumentStartEvent):
            document += 1
        elif isinstance(event, yaml.CollectionStartEvent):
            level = len(open_) + 1
            if level > limit:
                return document
            open_.append([event.anchor, level, level])
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, level, deepest = open_.pop()
            if anchor:
                heights[anchor] = deepest - level + 1
            if open_:
                open_[-1][2] = max(open_[-1][2], deepest)
        elif isinstance(event, yaml.AliasEvent):
            reached = len(open_) + heights.get(event.anchor or "", 0)
            if reached > limit:
                return document
            if open_:
                open_[-1][2] = max(open_[-1][2], reached)
    return 0


def load_yaml(text: str) -> list[Any]:
    """Every document of a YAML text; ValueError when one nests deeper than MAX_DEPTH.

    PyYAML composes nodes recursively: the depth is measured on the (flat) event stream
    first, and a text too deep to compose is refused as a whole. The whole text is parsed
    before anything is returned, so a syntax error on document 3 refuses the text rather
    than half of it."""
    deep = yaml_too_deep(text)
    if deep:
        raise ValueError(f"document {deep} nested deeper than {MAX_DEPTH} levels")
    documents = list(yaml.load_all(text, Loader=PlainLoader))  # noqa: S506 - a safe loader
    if any(escape in text for escape in _UNSTORABLE_YAML):  # how YAML writes NUL or a surrogate
        storable_text(documents)
    return documents
