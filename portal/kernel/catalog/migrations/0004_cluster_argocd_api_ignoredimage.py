"""Clusters read through the Argo CD API server, and images service discovery ignores."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0003_cluster_topology_argocd_instance"),
    ]

    operations = [
        migrations.AlterField(
            model_name="cluster",
            name="connection",
            field=models.CharField(
                choices=[
                    ("kubeconfig", "kubeconfig context"),
                    ("in_cluster", "in-cluster service account"),
                    ("api", "API URL + token"),
                    ("manifests", "folder of manifests"),
                    ("none", "not read (its apps come from an Argo CD instance)"),
                    ("argocd_api", "Argo CD API URL + read-only token"),
                ],
                default="kubeconfig",
                max_length=16,
            ),
        ),
        migrations.CreateModel(
            name="IgnoredImage",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("repository", models.CharField(max_length=300, unique=True)),
                ("ignored_by", models.CharField(blank=True, max_length=150)),
                ("ignored_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={"ordering": ["repository"]},
        ),
    ]
