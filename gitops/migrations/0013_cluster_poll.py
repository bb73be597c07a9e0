"""How a cluster's polls went moves from the catalog's Cluster row to gitops.ClusterPoll; the
values are copied here, and catalog 0011 then removes them from Cluster."""

import django.db.models.deletion
from django.db import migrations, models


FIELDS = ("last_poll_at", "last_ok_at", "last_error", "stale_since", "last_poll_seconds", "unavailable",
          "poll_lock_until", "poll_lock_token", "listing_digest", "listing_full_at", "poll_warning_count",
          "poll_warnings")


def copy_to_poll(apps, schema_editor):
    """A row for every cluster polled (or being polled) at least once; one never polled has none."""
    Cluster = apps.get_model("catalog", "Cluster")
    ClusterPoll = apps.get_model("gitops", "ClusterPoll")
    polled = Cluster.objects.filter(models.Q(last_poll_at__isnull=False) | models.Q(poll_lock_until__isnull=False))
    ClusterPoll.objects.bulk_create(
        [ClusterPoll(cluster_id=row["id"], **{name: row[name] for name in FIELDS})
         for row in polled.values("id", *FIELDS).iterator()],
        batch_size=500,
    )


def copy_to_cluster(apps, schema_editor):
    Cluster = apps.get_model("catalog", "Cluster")
    ClusterPoll = apps.get_model("gitops", "ClusterPoll")
    for row in ClusterPoll.objects.values("cluster_id", *FIELDS).iterator():
        Cluster.objects.filter(pk=row.pop("cluster_id")).update(**row)


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0010_catalog_revision'),
        ('gitops', '0012_app_since_exact'),
    ]

    operations = [
        migrations.CreateModel(
            name='ClusterPoll',
            fields=[
                ('cluster', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='poll', serialize=False, to='catalog.cluster')),
                ('last_poll_at', models.DateTimeField(blank=True, null=True)),
                ('last_ok_at', models.DateTimeField(blank=True, null=True)),
                ('last_error', models.TextField(blank=True)),
                ('stale_since', models.DateTimeField(blank=True, null=True)),
                ('last_poll_seconds', models.FloatField(blank=True, null=True)),
                ('unavailable', models.JSONField(blank=True, default=dict)),
                ('poll_lock_until', models.DateTimeField(blank=True, null=True)),
                ('poll_lock_token', models.CharField(blank=True, max_length=64)),
                ('listing_digest', models.CharField(blank=True, max_length=32)),
                ('listing_full_at', models.DateTimeField(blank=True, null=True)),
                ('poll_warning_count', models.PositiveIntegerField(default=0)),
                ('poll_warnings', models.JSONField(blank=True, default=list)),
            ],
        ),
        migrations.RunPython(copy_to_poll, copy_to_cluster),
    ]
