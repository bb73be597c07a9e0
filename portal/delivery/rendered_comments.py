"""The one comment on a pull request that tells its rendered diff, and keeping it up to date.

The comment is written once and then edited in place each time the branch moves (its forge id is
kept on `RenderedDiff.comment_id`); one deleted by someone is written again. Its body is Markdown
built from untrusted strings (object names, paths and values come from the repository, errors
from Argo CD): every such string is put in a code span, where forges render no HTML, no link and
no mention, and the body stays under the smallest limit of the three forges.
"""

from __future__ import annotations

import logging
import re

from forges.forge import Forge, ForgeError, NotFound
from portal.delivery.models import RenderedDiff
from portal.delivery.rendered_diff import ADDED, REMOVED, AppDiff, FieldChange, ObjectDiff, stored_diffs
from portal.kernel.links import absolute, rendered_output_path

log = logging.getLogger(__name__)

MARKER = "<!-- gitops-portal:rendered-diff -->"  # tells people (and the portal) whose comment it is
# GitHub's limit is 65,536 characters; GitLab's and Gitea's are larger.
MAX_BODY = 60_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def keep_comment(stored: RenderedDiff, forge: Forge, number: int) -> None:
    """Write the diff in the pull request's comment: edit the one written before, else add it.
    A forge that refuses is recorded on the row (`comment_error`) and tried again next time."""
    body = comment_body(stored.pull_request_id, stored.head, stored_diffs(stored.apps))
    try:
        if stored.comment_id:
            try:
                forge.update_comment(number, stored.comment_id, body)
            except NotFound:
                stored.comment_id = forge.create_comment(number, body)
        else:
            stored.comment_id = forge.create_comment(number, body)
    except ForgeError as error:
        stored.comment_error = str(error)[:1000]
        stored.save(update_fields=["comment_id", "comment_error"])
        log.warning("the rendered diff comment on #%s could not be written: %s", number, error)
        return
    stored.commented_head, stored.comment_error = stored.head, ""
    stored.save(update_fields=["comment_id", "commented_head", "comment_error"])


def comment_body(pull_request_id: int, head: str, diffs: list[AppDiff]) -> str:
    link = absolute(rendered_output_path(pull_request_id))
    lines = [
        MARKER,
        "### Rendered manifests",
        "",
        f"What the applications render at this branch's head {code(head[:12])}, against what they render "
        f"at their own target now. [Full rendered output]({link})",
    ]
    for diff in diffs:
        lines += ["", *app_lines(diff)]
    lines += ["", "_Kept up to date by the GitOps portal as the branch moves._"]
    body = "\n".join(lines) + "\n"
    if len(body) <= MAX_BODY:
        return body
    cut = body[: MAX_BODY - 200].rsplit("\n", 1)[0]
    return f"{cut}\n\n… the rest is in the [full rendered output]({link}).\n"


def app_lines(diff: AppDiff) -> list[str]:
    where = f"**{code(diff.app)}** on {code(diff.cluster)}"
    if not diff.renderer:
        return [f"{where}: {diff.error or 'no renderer is available'}."]
    by = f"{diff.renderer}, {code(diff.before_revision)} → {code(diff.after_revision[:12])}"
    if diff.error:
        return [f"{where} ({by}): not rendered: {code(diff.error)}"]
    comparison = diff.comparison
    counts = f"{_objects(comparison.changed)} changed, {_objects(comparison.unchanged)} unchanged"
    lines = [f"{where} ({by}): {counts}"]
    for obj in comparison.objects:
        lines += object_lines(obj)
    if comparison.more_objects:
        lines.append(f"- … and {comparison.more_objects} more changed objects")
    return lines


def object_lines(obj: ObjectDiff) -> list[str]:
    if obj.change in (ADDED, REMOVED):
        return [f"- {code(obj.label)} {obj.change}"]
    lines = [f"- {code(obj.label)}"] + [f"  - {field_line(change)}" for change in obj.fields]
    if obj.more_fields:
        lines.append(f"  - … and {obj.more_fields} more fields")
    return lines


def field_line(change: FieldChange) -> str:
    if change.before is None:
        return f"{code(change.path)}: added {code(change.after or '')}"
    if change.after is None:
        return f"{code(change.path)}: removed (was {code(change.before)})"
    return f"{code(change.path)}: {code(change.before)} → {code(change.after)}"


def code(text: str) -> str:
    """`text` as one Markdown code span: on one line, fenced by more backticks than it holds."""
    flat = _CONTROL.sub(" ", text)
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat.strip() else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def _objects(count: int) -> str:
    return f"{count} object{'' if count == 1 else 's'}"
