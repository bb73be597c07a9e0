"""Version changes from Argo CD's `status.summary.images` (a destination the portal does not
read): the union over the app's Pods, so a rollout shows both versions for a while."""

from __future__ import annotations

from gitops.derive.destinations import image_version_changes

KEY = (7, 3, 1)  # app, destination cluster, service


def test_a_replaced_version_is_a_change_from_what_left_to_what_runs():
    assert image_version_changes({KEY: {"1.6.0"}}, {KEY: {"1.7.0"}}) == [(KEY, "1.6.0", "1.7.0")]


def test_a_rollout_seen_midway_is_one_change_once_the_old_pods_are_gone():
    assert image_version_changes({KEY: {"1.6.0"}}, {KEY: {"1.6.0", "1.7.0"}}) == []
    assert image_version_changes({KEY: {"1.6.0", "1.7.0"}}, {KEY: {"1.7.0"}}) == [(KEY, "1.6.0", "1.7.0")]
    # A rollback back to the version before reads the same way.
    assert image_version_changes({KEY: {"1.6.0", "1.7.0"}}, {KEY: {"1.6.0"}}) == [(KEY, "1.7.0", "1.6.0")]


def test_first_sight_no_pods_and_the_same_versions_are_no_change():
    assert image_version_changes({}, {KEY: {"1.7.0"}}) == []
    assert image_version_changes({KEY: {"1.7.0"}}, {}) == []
    assert image_version_changes({KEY: {"1.7.0"}}, {KEY: {"1.7.0"}}) == []
    # Another destination or service is another key.
    assert image_version_changes({(7, 4, 1): {"1.6.0"}}, {KEY: {"1.7.0"}}) == []
