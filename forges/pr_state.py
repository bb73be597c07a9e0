"""What state one pull request is in on its forge: open, merged or closed, since when, and its checks.

Only the asking lives here; which pull requests to ask about and where the answer is kept
is the portal's (`portal.delivery.tracking`). GitLab's "opened"/"locked" already read as
OPEN in the clients, so every forge answers in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from forges.forge import CLOSED, MERGED, OPEN, Forge


@dataclass(frozen=True)
class PullRequestState:
    number: int
    state: str  # OPEN, MERGED or CLOSED
    title: str
    url: str
    checks: str  # PASS, RUNNING, FAIL or NONE for the head commit
    merged_at: datetime | None = None
    closed_at: datetime | None = None


def pull_request_state(forge: Forge, number: int) -> PullRequestState:
    """Ask `forge` about pull request `number` (two reads: the pull request, its head's checks)."""
    info = forge.pull_request(number)
    state = info.state if info.state in (OPEN, MERGED) else CLOSED
    return PullRequestState(
        number=info.number,
        state=state,
        title=info.title,
        url=info.url,
        checks=forge.checks(info),
        merged_at=info.merged_at,
        closed_at=info.closed_at,
    )
