"""A person's walk through the portal: collect every pull request offer a page, the API, the
assistant (MCP) tools or an alert shows, follow each to its preview, and judge the preview as
a reviewer would. Shared by the walk tests over the demo and over the repository layouts.

An offer is any link to the preview page (`/pr/preview?…`), wherever it is written: an
`href` or `hx-get` in a page or a partial, a `preview_url` in an API or MCP answer, an action
link in an alert. A clean preview answers 200, shows no error block and no "Not changed"
list, changes at least one line that carries the proposed version (a rollback's proposed
version older than the one it replaces), and names each service and version once in its
title and its branch.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from portal.releases.versions import parse_tag

PREVIEW = "/pr/preview?"
_OFFER_ATTR = re.compile(r'(?:href|hx-get)="(?:https?://[^/"]+)?(/pr/preview\?[^"]*)"')
# In prose (an assistant's answer), a link may end a sentence: its closing punctuation is not part of it.
_OFFER_TEXT = re.compile(r'(?:https?://[^/\s"\']+)?(/pr/preview\?[^\s"\'<>]*[^\s"\'<>.,;:)])')
_PARTIAL = re.compile(r'hx-get="(/(?:matrix/cell|services/[\w-]+/panels)\?[^"]*)"')
_TITLE = re.compile(r"<section class=\"panel preview\"[^>]*>\s*<h3>(.*?)</h3>", re.S)
_BRANCH = re.compile(r"<dt>New branch</dt><dd class=\"mono\">(.*?)</dd>", re.S)
_ADDED = re.compile(r'<span class="line add">(.*?)</span>', re.S)
_ERRORS = re.compile(r'class="(?:empty )?error"[^>]*>(.*?)</', re.S)
_PROBLEMS = re.compile(r'<ul class="problems">(.*?)</ul>', re.S)
_MOVES = re.compile(r'<span class="mono">([^<]*?) → ([^<]*?)</span>')


@dataclass
class Offers:
    """Offer URL (path and query) -> where it was found."""

    found: dict[str, set[str]] = field(default_factory=dict)

    def add(self, url: str, where: str) -> None:
        self.found.setdefault(html.unescape(url), set()).add(where)

    def from_html(self, text: str, where: str) -> None:
        for url in _OFFER_ATTR.findall(text):
            self.add(url, where)

    def from_json(self, value: Any, where: str) -> None:
        for url in _OFFER_TEXT.findall(json.dumps(value)):
            self.add(url, where)


_TEMPLATE_TEXT = re.compile(r"\{[#%]|[#%]\}")


def template_leaks(text: str) -> list[str]:
    """Template syntax a page shows as text (a comment Django does not close on one line): what a
    person would read instead of the page."""
    body = re.sub(r"<(script|style)\b.*?</\1>", "", text, flags=re.S)
    return [text_of(body[max(0, m.start() - 40): m.end() + 40]) for m in _TEMPLATE_TEXT.finditer(body)]


def partials(text: str) -> list[str]:
    """The htmx partials a page loads by itself or on a click (matrix cells, service panels)."""
    return list(dict.fromkeys(html.unescape(u) for u in _PARTIAL.findall(text)))


def text_of(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


@dataclass
class Verdict:
    url: str
    problems: list[str]

    @property
    def clean(self) -> bool:
        return not self.problems


def judge(url: str, status: int, page: str) -> Verdict:
    """What a reviewer would object to in the preview at `url`."""
    problems: list[str] = []
    if status != 200:
        errors = [text_of(e) for e in _ERRORS.findall(page)]
        return Verdict(url, [f"answered {status}: {'; '.join(errors) or page[:200]}"])
    problems += [f"error: {text_of(e)}" for e in _ERRORS.findall(page) if text_of(e)]
    problems += [f"not changed: {text_of(p)}" for p in _PROBLEMS.findall(page)]
    query = dict(parse_qsl(urlsplit(url).query))
    kind = query.get("kind", "upgrade")
    moves = [(html.unescape(a).strip(), html.unescape(b).strip()) for a, b in _MOVES.findall(page)]
    if not moves:
        problems.append("the preview names no version change")
    added = [text_of(line) for line in _ADDED.findall(page) if not text_of(line).startswith("+++")]
    for before, after in moves:
        if not any(after in line for line in added):
            problems.append(f"no changed line carries {after}")
        if kind == "rollback":
            old, new = parse_tag(after), parse_tag(before)
            if old is None or new is None or not old.key < new.key:
                problems.append(f"a rollback that does not propose an older version: {before} → {after}")
    for title in (text_of(t) for t in _TITLE.findall(page)):
        problems += [f"title repeats {r!r}: {title}" for r in repeated(_title_subjects(title))]
    for branch in (text_of(b) for b in _BRANCH.findall(page)):
        problems += [f"branch repeats {r!r}: {branch}" for r in repeated(_branch_subjects(branch, moves))]
    return Verdict(url, problems)


def repeated(parts: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    found = []
    for part in (p.strip() for p in parts):
        if part and part in seen and part not in found:
            found.append(part)
        seen.add(part)
    return found


def _title_subjects(title: str) -> list[str]:
    """"Update checkout to 3.4.1, cart to 1.9.0 in prod" -> ["checkout to 3.4.1", "cart to 1.9.0"]."""
    body = re.sub(r"^(?:Update|Promote|Roll back)\s+", "", title)
    body = re.sub(r"\s+(?:in|to)\s+\S+$", "", body)
    return re.split(r",\s*", body)


def _branch_subjects(branch: str, moves: list[tuple[str, str]]) -> list[str]:
    """`portal/checkout-3.4.1-cart-1.9.0-prod` split at each proposed version: the
    `<subject>-<version>` parts, which must not repeat."""
    name = branch.split("/", 1)[-1]
    versions = sorted({after for _, after in moves}, key=len, reverse=True)
    if not versions:
        return []
    pattern = "|".join(re.escape(v) for v in versions)
    return [m.group(0) for m in re.finditer(rf"[^-].*?-(?:{pattern})(?=-|$)", name)]
