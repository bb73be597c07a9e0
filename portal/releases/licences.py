"""Which package licences need a look before merging, by SPDX id, expressions parsed.

Three kinds are named: network copyleft (AGPL, SSPL), source-available (BUSL, Elastic) and
strong copyleft (GPL). Everything else — MIT, Apache, BSD, MPL, LGPL, ISC… — is left out, and
so are operating-system packages (purl types deb, rpm, apk, alpm): a distribution's GPL
userland is not what a reviewer of an application upgrade is asked about.

An expression is parsed with `license-expression` (the SPDX licensing), never string-matched:
`MIT OR AGPL-3.0-only` lets the user pick MIT and needs no look; `MIT AND AGPL-3.0-only` does.
An expression that does not parse is reported as itself, kind "unparsed", so a reviewer sees it.
This is a prompt to look, not legal advice.
"""

from __future__ import annotations

from functools import lru_cache

NETWORK_COPYLEFT = "network copyleft"
SOURCE_AVAILABLE = "source-available"
STRONG_COPYLEFT = "strong copyleft"
UNPARSED = "unparsed"
OS_PACKAGE_TYPES = frozenset({"deb", "rpm", "apk", "alpm"})
NOT_LEGAL_ADVICE = "not legal advice"

# SPDX id prefix -> kind. "GPL-" does not match LGPL-/AGPL- ids: those start otherwise.
_PREFIXES = (
    ("AGPL-", NETWORK_COPYLEFT),
    ("SSPL-", NETWORK_COPYLEFT),
    ("BUSL-", SOURCE_AVAILABLE),
    ("Elastic-", SOURCE_AVAILABLE),
    ("GPL-", STRONG_COPYLEFT),
)
# For AND (all apply) the weightiest kind counts; for OR (one may be chosen) the lightest.
_WEIGHT = {None: 0, STRONG_COPYLEFT: 1, SOURCE_AVAILABLE: 2, NETWORK_COPYLEFT: 3, UNPARSED: 4}


@lru_cache(maxsize=1)
def _licensing():  # type: ignore[no-untyped-def]
    from license_expression import get_spdx_licensing

    return get_spdx_licensing()


def kind_of(expression: str) -> str | None:
    """The kind of licence that needs a look, or None (permissive, weak copyleft, or none given)."""
    if not expression.strip():
        return None
    return _kind_of_text(expression.strip())


@lru_cache(maxsize=4096)
def _kind_of_text(expression: str) -> str | None:
    from license_expression import ExpressionError

    try:
        parsed = _licensing().parse(expression, validate=False)
    except (ExpressionError, ValueError, TypeError):
        return UNPARSED
    return _kind(parsed) if parsed is not None else None


def _kind(node: object) -> str | None:
    from boolean.boolean import AND, OR

    if isinstance(node, AND):
        return max((_kind(arg) for arg in node.args), key=lambda k: _WEIGHT[k])
    if isinstance(node, OR):
        return min((_kind(arg) for arg in node.args), key=lambda k: _WEIGHT[k])
    key = str(getattr(node, "key", "") or "")
    # `GPL-2.0-only WITH Classpath-exception-2.0` is a LicenseWithExceptionSymbol: its licence counts.
    symbol = getattr(node, "license_symbol", None)
    if symbol is not None:
        key = str(getattr(symbol, "key", key))
    for prefix, kind in _PREFIXES:
        if key.startswith(prefix):
            return kind
    return None


def same_licence(a: str, b: str) -> bool:
    """The two expressions say the same (order and spelling aside)."""
    if a.strip() == b.strip():
        return True
    try:
        return _licensing().parse(a, validate=False).simplify() == _licensing().parse(b, validate=False).simplify()
    except Exception:  # noqa: BLE001 - an unparseable expression is only equal to itself
        return False


def is_os_package(purl_type: str) -> bool:
    return purl_type in OS_PACKAGE_TYPES
