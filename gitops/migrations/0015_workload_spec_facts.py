"""What discipline findings read of a workload beyond its images (gitops.collectors.workloads.spec_facts):
empty for existing rows until their next full read."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('gitops', '0014_poll_interrupted'),
    ]

    operations = [
        migrations.AddField(
            model_name='workload',
            name='spec_facts',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
