"""The last poll's object versions leave the cluster row for gitops.ClusterObjectVersions.

Not copied: they only let the next poll skip apps, so each cluster's next poll is a full one."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0008_cluster_listing_versions'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='cluster',
            name='listing_versions',
        ),
    ]
