"""Go's `time.ParseDuration`, which Argo CD uses to read a sync window's `duration`.

Re-implemented rather than approximated: Go accepts `1.5h` and `-2m`, refuses a day unit
and spaces, and keeps its own rounding of fractions, and a window that Argo CD reads
differently would open at a different instant.
"""

from __future__ import annotations

import re

from gitops.syncwindows.cron import NS

_INT64 = 2**64

_UNITS_NS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
             "s": NS, "m": 60 * NS, "h": 3600 * NS}


def parse_go_duration(text: str) -> int:
    """Nanoseconds for a Go duration string (`1h30m`, `1.5h`, `-2m`); ValueError like Go's.

    No day unit, no spaces, units case-sensitive; `0` alone needs no unit.
    """
    if not isinstance(text, str):
        raise ValueError("the duration is not a string")
    rest = text
    negative = False
    if rest[:1] in ("+", "-"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if rest == "":
        raise ValueError(f"'{text}' is not a duration")
    total = 0
    while rest:
        match = re.match(r"([0-9]*)(?:\.([0-9]*))?", rest)
        assert match is not None  # the pattern can match the empty string
        whole, fraction = match.group(1), match.group(2)
        if not whole and not fraction:
            raise ValueError(f"'{text}' is not a duration")
        rest = rest[match.end():]
        unit_end = 0
        while unit_end < len(rest) and rest[unit_end] != "." and not ("0" <= rest[unit_end] <= "9"):
            unit_end += 1
        unit = rest[:unit_end]
        rest = rest[unit_end:]
        if not unit:
            raise ValueError(f"'{text}' has a number without a unit (ns, us, ms, s, m, h)")
        if unit not in _UNITS_NS:
            raise ValueError(f"'{text}' uses the unknown unit '{unit}' (Go knows ns, us, ms, s, m, h)")
        scale = _UNITS_NS[unit]
        value = int(whole or "0")
        if value > 2**63 // scale:
            raise ValueError(f"'{text}' is too long for a Go duration")
        value *= scale
        if fraction:
            # Go keeps at most the digits that fit in an int64 and scales in float64.
            digits = ""
            for digit in fraction:
                if int(digits + digit) > 2**63:
                    break
                digits += digit
            if digits and int(digits) > 0:
                value += int(float(int(digits)) * (float(scale) / float(10 ** len(digits))))
            if value > 2**63:
                raise ValueError(f"'{text}' is too long for a Go duration")
        total += value
        if total > 2**63:
            raise ValueError(f"'{text}' is too long for a Go duration")
    if negative:
        return -total
    if total > 2**63 - 1:
        raise ValueError(f"'{text}' is too long for a Go duration")
    return total


def wrap_int64(value: int) -> int:
    value %= _INT64
    return value - _INT64 if value >= 2**63 else value


