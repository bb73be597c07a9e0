"""A poll's start and an interrupted poll's time on gitops.ClusterPoll (gitops.clusterpoll):
what shows "poll interrupted at …" when a worker dies mid-poll. Both empty for existing rows."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("gitops", "0013_cluster_poll")]

    operations = [
        migrations.AddField(
            model_name="clusterpoll",
            name="poll_started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="clusterpoll",
            name="interrupted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
