"""What the last poll stored object by object, beside the cluster instead of on its row."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0009_cluster_object_versions'),
        ('gitops', '0010_app_attention_index'),
    ]

    operations = [
        migrations.CreateModel(
            name='ClusterObjectVersions',
            fields=[
                ('cluster', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='object_versions', serialize=False, to='catalog.cluster')),
                ('versions', models.JSONField(blank=True, default=dict)),
                ('full_poll_trusted_until', models.DateTimeField(blank=True, null=True)),
            ],
        ),
    ]
