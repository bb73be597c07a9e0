"""The part of a release's stored notes that goes into an upgrade or promotion pull request.

A pull request body has room for a summary, not a changelog (GitHub refuses bodies over
65,536 characters): the first lines, cut at a line end, then where the full notes are.
The notes were written for the service's own repository, where `#42` and `@alice` mean
that repository's issue and someone it knows; quoted in the GitOps repository they would
link, mention or even close (`Fixes #42`) the wrong things, so they are defused with a
zero-width space, which leaves the text as it reads.
"""

from __future__ import annotations

import re

from portal.kernel.catalog.models import Service
from portal.releases.models import Release
from portal.releases.versions import parse_tag

MAX_LINES = 60
MAX_CHARS = 4_000
# Several services in one pull request share this much, each at least MIN_CHARS.
SHARED_CHARS = 40_000
MIN_CHARS = 500

_ZERO_WIDTH = "\u200b"
# `@name` (not an e-mail address), `#12` and GitLab's `!12` (not inside a word or a URL).
_REFERENCE = re.compile(r"(?<![\w@.&/!#])([@#!])(?=[\w])")


def defused(text: str) -> str:
    """`text` with its issue, merge request and people references made inert."""

    def inert(found: re.Match[str]) -> str:
        sign = found.group(1)
        following = text[found.end() : found.end() + 1]
        if sign in "#!" and not following.isdigit():
            return sign  # a heading's `#`, `!important`: not a reference
        return sign + _ZERO_WIDTH

    return _REFERENCE.sub(inert, text)


def excerpt(notes: str, url: str | None, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS) -> str:
    """The first `max_lines` lines of `notes`, at most `max_chars`, cut at a line end; when
    anything was left out, a last line `… full notes: <url>`. Empty notes give ""."""
    text = defused((notes or "").strip())
    if not text:
        return ""
    lines = text.splitlines()
    kept = "\n".join(lines[:max_lines])
    cut = len(lines) > max_lines
    if len(kept) > max_chars:
        at_line_end = kept.rfind("\n", 0, max_chars)
        kept = kept[:at_line_end] if at_line_end > 0 else kept[:max_chars]
        cut = True
    if not cut:
        return kept
    return f"{kept.rstrip()}\n…\n… full notes: {url}" if url else f"{kept.rstrip()}\n…"


def notes_for(service: Service, version: str, max_chars: int = MAX_CHARS) -> str:
    """The excerpt of the stored notes of `service` at `version` (an image tag); "" when unknown."""
    known = Release.objects.for_service(service).exclude(notes_url=None)
    row = known.filter(tag=version).first()
    if row is None:
        parsed = parse_tag(version)
        row = known.filter(version=parsed.text).order_by("tag").first() if parsed else None
    if row is None:
        return ""
    return excerpt(row.notes, row.notes_url, max_chars=max_chars)


def share(changes: int) -> int:
    """Each service's room for notes when `changes` services make one pull request."""
    return max(MIN_CHARS, min(MAX_CHARS, SHARED_CHARS // max(changes, 1)))
