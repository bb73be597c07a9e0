"""Whether someone else's pull request title already proposes a change (Renovate, Dependabot, a person).

The portal links such a pull request instead of opening a second one for the same move.
Renovate writes "Update <image> Docker tag to v<version>" (only the major for a major bump),
Dependabot "Bump <name> from <old> to <new>" with the registry host dropped, a person
anything that names the service or image, the version and the environment.
"""

from __future__ import annotations

import re

from portal.delivery.planner import Change
from portal.kernel.imagerefs import parse_image

_PREFIX = re.compile(r"^\s*(?:\[security\]\s*)?(?:[^\w\s]+\s*)?(?:[\w-]+(?:\([^)]*\))?!?:\s*)?", re.IGNORECASE)
# Renovate's default topic is "<dep> Docker tag"; a repository that sets `commitMessageTopic` to
# "image {{depName}}" gets "Update image <dep> to v<version>" instead.
_RENOVATE = re.compile(
    r"^update (?:(?P<dep>\S+) docker tag|image (?P<image>\S+)) to (?P<version>\S+?)(?: \([^)]*\))?"
    r"(?: - (?:autoclosed|abandoned))?$",
    re.IGNORECASE,
)
_DEPENDABOT = re.compile(r"^bump (?P<name>\S+) from (?P<old>\S+) to (?P<new>\S+?)(?: in \S+)?$", re.IGNORECASE)


def names_change(title: str, change: Change) -> bool:
    """Whether a pull request title proposes this change (Renovate, Dependabot or a person)."""
    text = _PREFIX.sub("", title.strip(), count=1).strip()
    wanted = parse_image(change.image)
    renovate = _RENOVATE.match(text)
    if renovate:
        dep = parse_image(renovate["dep"] or renovate["image"])
        return bool(dep and wanted and dep.name == wanted.name) and _same_version(renovate["version"], change, True)
    dependabot = _DEPENDABOT.match(text)
    if dependabot:
        return _dependabot_names(dependabot["name"], change) and _same_version(dependabot["new"], change, False)
    # A person's title (or ours): the service or image, the version, and the environment.
    lowered = title.lower()
    subjects = [s.lower() for s in change.services] + [change.image.lower()]
    if wanted:
        subjects.append(wanted.repository.lower())
    if not any(re.search(rf"(?<![\w./-]){re.escape(s)}(?![\w/-])", lowered) for s in subjects if s):
        return False
    version = re.escape(change.to_version.lower().removeprefix("v"))
    if not re.search(rf"(?<![\w.])v?{version}(?![\w-]|\.\w)", lowered):
        return False
    environment = change.environment.lower()
    return not environment or re.search(rf"(?<![\w-]){re.escape(environment)}(?![\w-])", lowered) is not None


def _same_version(written: str, change: Change, major_only_allowed: bool) -> bool:
    written = written.lower().removeprefix("v")
    target = change.to_version.lower().removeprefix("v")
    if written == target:
        return True
    # Renovate names only the major for a major bump ("to v2"), and keeps one PR per major.
    major = re.match(r"\d+", target)
    return major_only_allowed and written.isdigit() and major is not None and written == major.group()


def _dependabot_names(name: str, change: Change) -> bool:
    # Dependabot drops the registry host: ghcr.io/acme/api is "acme/api", nginx is "nginx".
    wanted = parse_image(change.image)
    written = parse_image(name)
    if wanted is None or written is None:
        return False
    if written.repository.lower() == wanted.repository.lower():
        return True
    return name.lower() in {s.lower() for s in change.services}
