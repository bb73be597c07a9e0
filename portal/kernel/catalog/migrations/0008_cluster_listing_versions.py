from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0007_platform_connections'),
    ]

    operations = [
        migrations.AddField(
            model_name='cluster',
            name='listing_versions',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
