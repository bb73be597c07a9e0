"""The StateChange rows the store writes for an app seeded straight into the database.

`seed_app` writes an app's current state only; the notification pass reads what changed.
These are the rows a poll would have written to get there: "present" when the app was
first seen, then the change into its current sync and health at their `*_since`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gitops.models import GitOpsApp, StateChange
from tests.fixtures.seed import seed_app


def state_change(app: GitOpsApp, field: str, old: str, new: str, at: datetime) -> StateChange:
    return StateChange.objects.create(cluster_id=app.cluster_id, app=app, field=field, old=old, new=new, at=at,
                                      object_key=f"{app.tool}/{app.kind}/{app.namespace}/{app.name}")


def write_store_rows(app: GitOpsApp) -> GitOpsApp:
    state_change(app, "presence", "", "present", app.first_seen)
    if app.sync_status != "Synced" and app.sync_since is not None:
        state_change(app, "sync", "Synced", app.sync_status, app.sync_since)
    if app.health_status != "Healthy" and app.health_since is not None:
        state_change(app, "health", "Healthy", app.health_status, app.health_since)
    return app


def seeded(*args: Any, **kwargs: Any) -> GitOpsApp:
    """`seed_app`, with the rows the store would have written for it."""
    return write_store_rows(seed_app(*args, **kwargs))
