"""What state one pull request is in on its forge: open, merged or closed, since when, and its checks.

Only the asking lives here; which pull requests to ask about and where the answer is kept
is the portal's (`portal.delivery.tracking`). GitLab's "opened"/"locked" already read as
OPEN in the clients, so every forge answers in the same words.

The pull request and its checks are two questions with different permissions (a GitHub
fine-grained token with Contents and Pull requests may read the first, not always the
second): `checks_state` answers the second on its own, so a caller can keep the state and
merge time (`pull_request_state(..., with_checks=False)`) before asking for the checks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from forges.forge import CLOSED, MERGED, NONE, OPEN, ChecksUnreadable, Forge, PullRequestInfo


@dataclass(frozen=True)
class PullRequestState:
    number: int
    state: str  # OPEN, MERGED or CLOSED
    title: str
    url: str
    info: PullRequestInfo  # what the forge said, for asking about its checks
    checks: str = NONE  # PASS, RUNNING, FAIL or NONE for the head commit (NONE when not asked)
    checks_unknown: str = ""  # why the checks could not be read; "" when they were (or were not asked)
    merged_at: datetime | None = None
    closed_at: datetime | None = None


@dataclass(frozen=True)
class ChecksState:
    checks: str  # PASS, RUNNING, FAIL or NONE for the head commit
    unknown: str = ""  # why the checks could not be read (the token's permissions); "" when they were


def pull_request_state(forge: Forge, number: int, with_checks: bool = True) -> PullRequestState:
    """Ask `forge` about pull request `number`: open, merged or closed, since when, and (unless
    `with_checks` is false) its head's checks."""
    info = forge.pull_request(number)
    state = info.state if info.state in (OPEN, MERGED) else CLOSED
    answer = PullRequestState(
        number=info.number,
        state=state,
        title=info.title,
        url=info.url,
        info=info,
        merged_at=info.merged_at,
        closed_at=info.closed_at,
    )
    if not with_checks:
        return answer
    checks = checks_state(forge, answer)
    return replace(answer, checks=checks.checks, checks_unknown=checks.unknown)


def checks_state(forge: Forge, pull: PullRequestState) -> ChecksState:
    """The head commit's checks; NONE and why when the token may read none of them."""
    try:
        return ChecksState(forge.checks(pull.info))
    except ChecksUnreadable as error:
        return ChecksState(NONE, unknown=str(error))


def checks_page(forge_kind: str, pr_url: str) -> str:
    """Where a person sees a pull request's checks on its forge, from the pull request's web page:
    GitHub's Checks tab, GitLab's pipelines of the merge request; Gitea and Forgejo list the
    commit statuses (each with its details link) on the pull request's own page."""
    base = pr_url.rstrip("/")
    if not base:
        return ""
    if forge_kind == "github":
        return f"{base}/checks"
    if forge_kind == "gitlab":
        return f"{base}/pipelines"
    return base
