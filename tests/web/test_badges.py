"""One definition of a badge: the CSS class of each state and the markup, shared by the
templates (`{% badge %}` and the class filters) and the Python-drawn matrix cells and tiles."""

from __future__ import annotations

from django.template import engines

from portal.web.badges import badge_html, health_class, jump_class, sync_class, workload_class
from portal.web.templatetags.portal_tags import diff_class


def test_each_state_has_one_class():
    assert [sync_class(s) for s in ("Synced", "OutOfSync", "Unknown", None)] == ["ok", "warn", "", ""]
    assert [health_class(s) for s in ("Healthy", "Progressing", "Degraded", "Missing", "Suspended")] == [
        "ok", "warn", "bad", "bad", ""]
    kstatus = ("Current", "Failed", "InProgress", "Terminating")
    assert [workload_class(s) for s in kstatus] == ["ok", "bad", "warn", "warn"]
    assert [jump_class(j) for j in ("major", "minor", "patch")] == ["warn", "", ""]


def test_a_badge_escapes_its_class_label_and_title():
    assert badge_html("bad", "Argo: degraded") == '<span class="badge bad">Argo: degraded</span>'
    assert badge_html("", "automatic") == '<span class="badge">automatic</span>'
    html = badge_html('x" onclick="y', "<b>", 'say "hi"')
    assert html == '<span class="badge x&quot; onclick=&quot;y" title="say &quot;hi&quot;">&lt;b&gt;</span>'


def test_the_template_tag_writes_the_same_markup_as_python():
    template = engines["django"].from_string(
        "{% load portal_tags %}{% badge status|health_class status message %}|{% badge status|sync_class status %}")
    html = template.render({"status": "Degraded", "message": "exceeded <its> deadline"})
    assert html == badge_html("bad", "Degraded", "exceeded <its> deadline") + "|" + badge_html("", "Degraded")


def test_diff_lines_are_classed_by_their_first_characters():
    lines = ["--- a/x", "+++ b/x", "@@ -1 +1 @@", "-old", "+new", " same", ""]
    assert [diff_class(line) for line in lines] == ["hunk", "hunk", "hunk", "del", "add", "", ""]
