"""Glob patterns as Argo CD matches a sync window's applications, clusters and namespaces.

Argo CD uses gobwas/glob v0.2.3 compiled without separators; Python's fnmatch differs
(no `{a,b}`, other escapes), so the pattern is translated to a regex here instead.
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str] | None:
    """A regex equivalent to gobwas/glob v0.2.3's reading of `pattern`; None if it does not compile.

    `*`/`**` any run (no separators, so `/` and `.` too), `?` one character, `[abc]`,
    `[a-z]`, `[!...]` classes, `{a,b}` alternatives, `\\` escapes. Case-sensitive, anchored.
    """
    out: list[str] = []
    depth = 0
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "{":
            depth += 1
            out.append("(?:")
            i += 1
        elif ch == "," and depth:
            out.append("|")
            i += 1
        elif ch == "}" and depth:
            depth -= 1
            out.append(")")
            i += 1
        elif ch == "[":
            parsed = _glob_class(pattern, i + 1)
            if parsed is None:
                return None
            piece, i = parsed
            out.append(piece)
        elif ch == "?":
            out.append(".")
            i += 1
        elif ch == "*":
            out.append(".*")
            i += 2 if pattern[i + 1:i + 2] == "*" else 1
        else:
            breakers = "?*[{}," if depth else "?*[{"
            text, i = _glob_text(pattern, i, breakers)
            out.append(re.escape(text))
    # v0.2.3's parser accepts an unclosed `{` as if it were closed at the end.
    out.append(")" * depth)
    return re.compile("".join(out), re.DOTALL)


def _glob_text(pattern: str, i: int, breakers: str) -> tuple[str, int]:
    chars: list[str] = []
    escaped = False
    while i < len(pattern):
        ch = pattern[i]
        if not escaped:
            if ch == "\\":
                escaped = True
                i += 1
                continue
            if ch in breakers:
                break
        escaped = False
        chars.append(ch)
        i += 1
    # A trailing backslash is dropped silently by v0.2.3.
    return "".join(chars), i


def _glob_class(pattern: str, i: int) -> tuple[str, int] | None:
    negate = False
    low = high = ""
    chars = ""
    want_high = want_close = False
    while True:
        if i >= len(pattern):
            return None
        ch = pattern[i]
        i += 1
        if want_close:
            if ch != "]":
                return None
            break
        if want_high:
            high = ch
            want_close = True
            continue
        if not negate and ch == "!":
            negate = True
            continue
        if pattern[i:i + 1] == "-":
            low = ch
            i += 1
            want_high = True
            continue
        chars, i = _glob_text(pattern, i - 1, "]")
        want_close = True
    is_range = bool(low and high)
    if bool(chars) == is_range or (is_range and high < low):
        return None
    body = (re.escape(low) + "-" + re.escape(high)) if is_range else "".join(re.escape(c) for c in chars)
    return ("[^" if negate else "[") + body + "]", i


def glob_match(pattern: str, value: str) -> bool:
    """Argo CD's `globMatch(pattern, value, allowNegation=false)`: `*` matches everything."""
    if pattern == "*":
        return True
    compiled = compile_glob(pattern)
    return compiled is not None and compiled.fullmatch(value) is not None


