"""PullRequest now belongs to portal.delivery (its 0006 takes over the same table,
forges_pullrequest): only Django's state changes here, no table is dropped. Forges keeps
no models: it knows Git hosts, not the portal's pull requests."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("forges", "0001_pullrequest"),
        ("delivery", "0006_pullrequest_moved"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="PullRequest")]),
    ]
