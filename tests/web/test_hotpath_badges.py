"""The hot path's badges are web/_badge.html's spelling: filled into the fragment drawn once
per shape, they must equal the fragment drawn in full, escaping included (labels and titles
carry cluster strings)."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from portal.web import hotpath
from portal.web.badges import BADGE_TEMPLATE

CASES = [
    ("bad", "Degraded", ""),
    ("", "Unknown", ""),
    ("warn", "OutOfSync", "app on prod-eu at least since Mon 06:00"),
    ("", "", "a title only"),
    ("bad", '<script>alert("x")</script>', "it's & \"quoted\" <b>"),
    ("ok", "kind slot in label: \ue000kind\ue001", ""),  # a slot's spelling in a value: drawn in full
]


@pytest.mark.parametrize(("kind", "label", "title"), CASES)
def test_a_filled_badge_is_the_fragment_drawn_in_full(kind, label, title):
    full = render_to_string(BADGE_TEMPLATE, {"kind": kind, "label": label, "title": title})

    assert hotpath.badge(kind, label, title) == full
    assert hotpath.badge(kind, label, title) == full  # the second, from the kept skeleton


def test_a_fragment_that_changes_a_value_is_drawn_in_full(monkeypatch, tmp_path, settings):
    """A slot the fragment does not show as given (a filter on it) cannot be filled."""
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "_badge.html").write_text('<span class="badge {{ kind }}">{{ label|upper }}</span>')
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [str(tmp_path)], "APP_DIRS": False}]
    hotpath._badge_skeleton.cache_clear()
    try:
        assert hotpath.badge("bad", "Degraded") == '<span class="badge bad">DEGRADED</span>'
    finally:
        hotpath._badge_skeleton.cache_clear()


@pytest.mark.parametrize(("kind", "label", "title"), [*CASES, (None, 0, None), ("ok", 3, "")])
def test_the_badge_tag_draws_the_fragment(kind, label, title):
    """`{% badge %}` fills the kept skeleton too; it draws what including the fragment drew, for
    values that are not strings as well (a count, a missing title)."""
    from django.template import Context, Template

    drawn = Template("{% load portal_tags %}{% badge kind label title %}").render(
        Context({"kind": kind, "label": label, "title": title}))
    assert drawn == render_to_string(BADGE_TEMPLATE, {"kind": kind, "label": label, "title": title or ""})
