"""The decode's fast path (gitops.sources.decoding.load_json: json.loads first, then a depth check on
the accepted text) must judge depth exactly as the bounded path does, brackets inside
strings and escaped quotes included, on either side of MAX_DEPTH."""

from __future__ import annotations

import json

import pytest

from gitops.rawobjects import MAX_DEPTH
from gitops.sources.decoding import json_nests_deeper, load_json, valid_json_nests_deeper


def nested(depth: int) -> str:
    inner = "1"
    for level in range(depth):
        inner = ('{"k":%s}' if level % 2 else "[%s]") % inner
    return inner


WRAPS = ['{"a":%s}', "[%s]", '{"s":"]]]}}}","x":[%s]}', '{"s":"[[[{{{","x":%s}', '{"e":"\\\\\\"]]","x":%s}',
         '{"items":[{"a":"[]"},%s]}']


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
