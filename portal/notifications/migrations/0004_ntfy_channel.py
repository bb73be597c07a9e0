"""ntfy joins the channel kinds (portal.notifications.channels.Ntfy)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('notifications', '0003_troubles_from_current_state'),
    ]

    operations = [
        migrations.AlterField(
            model_name='channel',
            name='kind',
            field=models.CharField(
                choices=[
                    ("slack", "Slack (incoming webhook)"),
                    ("teams", "Microsoft Teams (incoming webhook / workflow)"),
                    ("email", "E-mail"),
                    ("webhook", "Webhook (signed JSON)"),
                    ("discord", "Discord (webhook)"),
                    ("ntfy", "ntfy push (topic URL)"),
                ],
                max_length=16,
            ),
        ),
    ]
