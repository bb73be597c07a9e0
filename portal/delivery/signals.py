"""What delivery announces, for the layers above it (notifications) to act on: delivery
imports none of them; they subscribe in their AppConfig.ready(). Each signal is sent from the
periodic deployment tracking (portal.delivery.deployments.track), at most once per run per
subject; receivers must be idempotent, as the next run sends again while the fact holds."""

from django.dispatch import Signal

# A merged portal PR still not running everywhere it should, an hour or more after its merge:
# `pull_request=` (portal.delivery.models.PullRequest), `progress=` (deployments.Progress), `at=`.
merged_not_deployed = Signal()

# An open portal PR whose checks forge tracking marked failing (checks_failed_notified_at):
# `pull_request=`, `at=`.
pr_checks_failed = Signal()

# A rollback the portal would propose: `offer=` (rollbacks.RollbackOffer), `app_id=`, `at=`.
rollback_offered = Signal()
