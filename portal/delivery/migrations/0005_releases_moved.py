"""Release and RegistryPoll now belong to portal.releases (its 0001 takes over the same
tables): only Django's state changes here, no table is dropped."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("delivery", "0004_placements"),
        ("releases", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="Release"),
                migrations.DeleteModel(name="RegistryPoll"),
            ]
        )
    ]
