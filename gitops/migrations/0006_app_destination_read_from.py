"""An app belongs to its destination cluster; `read_from` is the cluster whose poll reports
it, and keys the app. Existing rows were filed under the cluster that listed them, so both
start equal. Running versions may come without a workload (Argo CD's summary.images)."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import F


def read_from_listing_cluster(apps, schema_editor):
    apps.get_model("gitops", "GitOpsApp").objects.update(read_from_id=F("cluster_id"))


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0003_cluster_topology_argocd_instance"),
        ("gitops", "0005_statechange_processed"),
    ]

    operations = [
        migrations.AddField(
            model_name="gitopsapp",
            name="read_from",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="apps_read", to="catalog.cluster"
            ),
        ),
        migrations.RunPython(read_from_listing_cluster, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="gitopsapp",
            name="read_from",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="apps_read", to="catalog.cluster"
            ),
        ),
        migrations.RemoveConstraint(model_name="gitopsapp", name="uniq_app"),
        migrations.AddConstraint(
            model_name="gitopsapp",
            constraint=models.UniqueConstraint(
                fields=("read_from", "tool", "kind", "namespace", "name"), name="uniq_app"
            ),
        ),
        migrations.AddField(
            model_name="gitopsapp",
            name="argocd_instance",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="apps",
                to="catalog.argocdinstance",
            ),
        ),
        migrations.AlterField(
            model_name="runningversion",
            name="workload",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name="running_versions",
                to="gitops.workload",
            ),
        ),
    ]
