"""How a cluster's polls went is gitops.ClusterPoll's now (gitops 0013 copied the values)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0010_catalog_revision'),
        ('gitops', '0013_cluster_poll'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='cluster',
            name='last_error',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='last_ok_at',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='last_poll_at',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='last_poll_seconds',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='listing_digest',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='listing_full_at',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='poll_lock_token',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='poll_lock_until',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='poll_warning_count',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='poll_warnings',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='stale_since',
        ),
        migrations.RemoveField(
            model_name='cluster',
            name='unavailable',
        ),
    ]
