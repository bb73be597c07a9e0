"""Argo CD topology: discovered destination clusters (no environment yet, never polled),
the names Argo CD instances give a cluster, and Argo CD instances as catalog rows."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0002_service_source_repository"),
    ]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="argocd_aliases",
            field=models.JSONField(
                blank=True, default=list, help_text="Argo CD cluster names or server URLs that mean this cluster"
            ),
        ),
        migrations.AddField(
            model_name="cluster",
            name="discovered",
            field=models.BooleanField(default=False),
        ),
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
                ],
                default="kubeconfig",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="cluster",
            name="environment",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="clusters",
                to="catalog.environment",
            ),
        ),
        migrations.CreateModel(
            name="ArgoCDInstance",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.SlugField(max_length=63, unique=True)),
                (
                    "namespace",
                    models.CharField(default="argocd", help_text="Argo CD's control-plane namespace", max_length=253),
                ),
                (
                    "api_url",
                    models.URLField(
                        blank=True, help_text="Argo CD API server, e.g. https://argocd.example.com", max_length=500
                    ),
                ),
                (
                    "token_env",
                    models.CharField(
                        blank=True,
                        help_text="name of the environment variable that holds a read-only API token",
                        max_length=200,
                    ),
                ),
                ("verify_tls", models.BooleanField(default=True)),
                (
                    "ui_url",
                    models.URLField(
                        blank=True, help_text="Argo CD UI for links; empty: PORTAL_ARGOCD_URL", max_length=500
                    ),
                ),
                (
                    "agent_mapping",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("", "no argocd-agent"),
                            ("namespace", "argocd-agent principal: one namespace per agent"),
                            ("destination", "argocd-agent principal: destination name is the agent"),
                        ],
                        default="",
                        max_length=16,
                    ),
                ),
                (
                    "cluster",
                    models.ForeignKey(
                        blank=True,
                        help_text="the cluster Argo CD runs on (its in-cluster destination), read through its "
                        "Kubernetes API",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="argocd_instances",
                        to="catalog.cluster",
                    ),
                ),
            ],
            options={"verbose_name": "Argo CD instance", "ordering": ["name"]},
        ),
    ]
