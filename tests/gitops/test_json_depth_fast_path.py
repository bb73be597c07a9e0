"""The decode's fast path (gitops.sources.decoding.load_json: json.loads first, then a depth check on
the accepted text) must judge depth exactly as the bounded path does, brackets inside
strings and escaped quotes included, on either side of MAX_DEPTH."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitops.rawobjects import MAX_DEPTH
from gitops.sources.decoding import json_nests_deeper, load_json, may_hold_unstorable, valid_json_nests_deeper


def nested(depth: int) -> str:
    inner = "1"
    for level in range(depth):
        inner = ('{"k":%s}' if level % 2 else "[%s]") % inner
    return inner


WRAPS = ['{"a":%s}', "[%s]", '{"s":"]]]}}}","x":[%s]}', '{"s":"[[[{{{","x":%s}', '{"e":"\\\\\\"]]","x":%s}',
         '{"items":[{"a":"[]"},%s]}',
         # Escapes whose letter the check keeps beside its backslash: a dropped letter would leave
         # the backslash next to the closing quote and hide the string's end.
         '{"n":"]]\\n","x":%s}', '{"n":"[[\\t\\\\","x":%s}', '{"u":"\\u005d\\u005b]","x":[%s]}',
         '{"s":"\\/[","b":"\\b\\f\\r\\\\\\"[","x":%s}', '{"k\\"[":%s}']


@pytest.mark.parametrize("depth", [1, 31, 32, 33, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 600])
@pytest.mark.parametrize("wrap", WRAPS)
def test_the_fast_depth_check_agrees_with_the_bounded_one(depth, wrap):
    data = (wrap % nested(depth)).encode()
    json.loads(data)  # valid: the fast check only ever sees what json.loads accepted
    assert valid_json_nests_deeper(data) == json_nests_deeper(data)


def test_a_list_too_deep_for_the_decoder_still_has_its_deep_item_cut():
    page = '{"items":[{"metadata":{"name":"ok"}},{"metadata":{"name":"deep"},"spec":' + nested(5000) + "}]}"
    decoded, cut = load_json(page.encode())
    assert cut and decoded["items"][0] == {"metadata": {"name": "ok"}}


# Any JSON value, its strings drawn from the characters that decide where strings end.
_TRICKY_TEXT = st.text(alphabet='[]{}"\\/bfnrtu\n\x00\u2028<&e', max_size=8)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY_TEXT, inner, max_size=3),
    max_leaves=40,
)


def depth_of(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, limit=st.integers(min_value=1, max_value=12), ascii_only=st.booleans())
def test_the_fast_depth_check_measures_any_value_as_its_decoder_nests_it(value, limit, ascii_only):
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert valid_json_nests_deeper(data, limit) == (depth_of(value) > limit) == json_nests_deeper(data, limit)
    # The same value where escapes are sparse (the check cuts them out before it translates).
    sparse = b'{"pad":"%s","v":%s}' % (b"x" * 64 * len(data), data)
    assert valid_json_nests_deeper(sparse, limit) == (depth_of(value) + 1 > limit) == json_nests_deeper(sparse, limit)


@pytest.mark.parametrize(("text", "walked"), [
    ('{"a":"\\u0000"}', True), ('{"a":"\\ud83d"}', True), ('{"a":"\\uDC00"}', True),
    ('{"a":"\\u003c\\u0026"}', False), ('{"a":"plain \\\\ backslash"}', False), ('{"a":"b"}', False),
])
def test_only_texts_that_may_hold_unstorable_text_are_walked_for_it(text, walked):
    assert may_hold_unstorable(text.encode()) is walked
    assert may_hold_unstorable(b'"\x00"') is True
