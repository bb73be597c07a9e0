"""The one comment the portal keeps on a pull request: created once, edited in place, on every forge
(GitHub and Gitea: the issue's comments; GitLab: the merge request's notes)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forges.forge import NotFound
from tests.fakes.forges.harness import KINDS, Harness, running

COMMENTS = {"github": r"/issues/1/comments$", "gitlab": r"/merge_requests/1/notes$", "gitea": r"/issues/1/comments$"}
EDIT = {
    "github": r"/issues/comments/\d+$", "gitlab": r"/merge_requests/1/notes/\d+$", "gitea": r"/issues/comments/\d+$"
}
EDIT_METHOD = {"github": "PATCH", "gitlab": "PUT", "gitea": "PATCH"}


@pytest.fixture(params=KINDS)
def forge(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with running(request.param) as harness:
        harness.model.add_pull("Upgrade checkout to 1.7.0 in prod", "main")
        yield harness


def test_a_comment_is_created_then_edited_in_place(forge: Harness) -> None:
    comment_id = forge.forge.create_comment(1, "**first** body")
    forge.forge.update_comment(1, comment_id, "second body")

    [comment] = forge.model.comments_on(1)
    assert str(comment.id) == comment_id
    assert comment.body == "second body"
    assert len(forge.server.requests_matching("POST", COMMENTS[forge.kind])) == 1
    assert [status for *_, status in forge.server.requests_matching(EDIT_METHOD[forge.kind], EDIT[forge.kind])] == [
        200
    ]


def test_editing_a_deleted_comment_is_not_found(forge: Harness) -> None:
    comment_id = forge.forge.create_comment(1, "body")
    forge.model.comments.clear()  # someone deleted it on the forge

    with pytest.raises(NotFound):
        forge.forge.update_comment(1, comment_id, "again")
