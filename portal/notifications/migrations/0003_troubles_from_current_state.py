"""Start the StateChange consumer from the fleet as it is, not from its whole history.

Before this, each pass re-derived episodes from 30 days of StateChange rows. Replaying that
backlog through the new consumer would cost a first pass minutes on a large fleet and could
date an ongoing trouble differently from the episode already sent. Instead: every existing
row is marked consumed, and every app not in sync and healthy now gets its Trouble —
dated and linked from its open gitops episode when it has one (so nobody hears of it
again), else from the `since` of the state that is wrong. Rows written from now on are
consumed as usual.

The rule "in sync and healthy" is restated here on purpose (a migration must not import
code that may change later): sync is not OutOfSync and health is Healthy.
"""

from django.db import migrations
from django.utils import timezone

APP_ATTENTION = "app_attention"


def troubles_from_current_state(apps, schema_editor):
    StateChange = apps.get_model("gitops", "StateChange")
    GitOpsApp = apps.get_model("gitops", "GitOpsApp")
    Episode = apps.get_model("notifications", "Episode")
    Trouble = apps.get_model("notifications", "Trouble")
    now = timezone.now()
    StateChange.objects.filter(processed__isnull=True).update(processed=now)

    open_episodes = {}
    for episode_id, app_id, started_at in (
        Episode.objects.filter(kind=APP_ATTENTION, ended_at__isnull=True, app__isnull=False)
        .order_by("started_at")
        .values_list("id", "app_id", "started_at")
    ):
        open_episodes[app_id] = (episode_id, started_at)  # the latest open one wins

    troubled = GitOpsApp.objects.exclude(health_status="Healthy") | GitOpsApp.objects.filter(sync_status="OutOfSync")
    new = []
    for app_id, sync, sync_since, health, health_since, first_seen in troubled.values_list(
        "id", "sync_status", "sync_since", "health_status", "health_since", "first_seen"
    ):
        if app_id in open_episodes:
            episode_id, since = open_episodes[app_id]
        else:
            wrong = [t for t in ((sync_since if sync == "OutOfSync" else None),
                                 (health_since if health != "Healthy" else None)) if t is not None]
            episode_id, since = None, min(wrong) if wrong else (first_seen or now)
        new.append(Trouble(app_id=app_id, since=since, sync_status=sync, health_status=health, episode_id=episode_id))
    Trouble.objects.bulk_create(new, batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("notifications", "0002_trouble"),
        ("gitops", "0005_statechange_processed"),
    ]

    operations = [migrations.RunPython(troubles_from_current_state, migrations.RunPython.noop)]
