# RenderedDiff: an open pull request's rendered-manifest diff at its branch head, the full
# output both sides rendered, and the id of the one forge comment the portal keeps up to date
# (portal.delivery.rendered_previews).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('delivery', '0014_preview_results'),
    ]

    operations = [
        migrations.CreateModel(
            name='RenderedDiff',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('head', models.CharField(max_length=64)),
                ('apps', models.JSONField(blank=True, default=list)),
                ('outputs', models.JSONField(blank=True, default=list)),
                ('computed_at', models.DateTimeField()),
                ('comment_id', models.CharField(blank=True, max_length=64)),
                ('commented_head', models.CharField(blank=True, max_length=64)),
                ('comment_error', models.TextField(blank=True)),
                ('pull_request', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='rendered', to='delivery.pullrequest')),
            ],
        ),
    ]
