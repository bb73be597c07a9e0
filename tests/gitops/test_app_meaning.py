"""An app object's meaning (gitops.derive.unchanged.meaning): the digest that tells a reconciliation's
new stamps from a real change, poll after poll, whatever else the decoder read beside the object."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from gitops.derive.unchanged import meaning

APP = {
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
    "metadata": {"name": "payments", "namespace": "argocd", "uid": "u-1", "resourceVersion": "41",
                 "labels": {"team": "pay"}},
    "spec": {"project": "default", "source": {"repoURL": "https://git.example/pay.git", "targetRevision": "main"}},
    "status": {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}, "reconciledAt": "2026-12-07T10:00:00Z",
               "summary": {"images": ["ghcr.io/acme/pay:2.4.0"]}, "weights": [1, 2.5, True, None]},
}


def decoded(*objects: dict) -> list[dict]:
    return json.loads(json.dumps({"items": list(objects)}))["items"]


def test_the_same_object_means_the_same_whatever_it_was_decoded_with():
    # One decoder call shares its key strings between objects: the digest must not see that.
    alone = decoded(APP)[0]
    other = {**APP, "metadata": {**APP["metadata"], "name": "orders", "uid": "u-2"}}
    among_others = decoded(other, APP, other)[1]
    assert meaning(alone) == meaning(among_others) == meaning(APP)


def test_new_stamps_mean_nothing_and_any_other_change_does():
    restamped = json.loads(json.dumps(APP))
    restamped["metadata"]["resourceVersion"] = "42"
    restamped["status"]["reconciledAt"] = "2026-12-07T10:03:00Z"
    assert meaning(restamped) == meaning(APP)
    for change in (lambda o: o["status"]["health"].update(status="Degraded"),
                   lambda o: o["status"]["weights"].__setitem__(1, 2.6),
                   lambda o: o["status"]["weights"].__setitem__(2, 1),  # true is not 1
                   lambda o: o["metadata"]["labels"].update(team="core")):
        changed = json.loads(json.dumps(APP))
        change(changed)
        assert meaning(changed) != meaning(APP)


def test_a_value_no_json_decoder_makes_is_digested_too():
    loaded = {**APP, "spec": {**APP["spec"], "at": datetime(2026, 12, 7, tzinfo=UTC)}}
    later = {**APP, "spec": {**APP["spec"], "at": datetime(2026, 12, 8, tzinfo=UTC)}}
    assert meaning(loaded) != meaning(later) != meaning(APP)
