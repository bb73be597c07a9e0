"""Release and RegistryPoll moved here from portal.delivery. Their tables keep their names
(delivery_release, delivery_registrypoll), so this migration only tells Django's state; the
database is untouched. delivery.0005 removes them from delivery's state."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('catalog', '0002_service_source_repository'),
        ('delivery', '0004_placements'),  # the tables exist from delivery's migrations
    ]

    state_operations = [
        migrations.CreateModel(
            name='RegistryPoll',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('last_poll_at', models.DateTimeField(blank=True, null=True)),
                ('last_ok_at', models.DateTimeField(blank=True, null=True)),
                ('last_error', models.TextField(blank=True)),
                ('last_error_at', models.DateTimeField(blank=True, null=True)),
                ('tags_seen', models.PositiveIntegerField(default=0, help_text='tags listed by the last good poll')),
                ('notes_read_at', models.DateTimeField(blank=True, help_text="last good read of the forge's releases", null=True)),
                ('notes_error', models.TextField(blank=True)),
                ('notes_error_at', models.DateTimeField(blank=True, null=True)),
                ('service', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='registry_poll', to='catalog.service')),
            ],
            options={
                'db_table': 'delivery_registrypoll',
            },
        ),
        migrations.CreateModel(
            name='Release',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tag', models.CharField(max_length=128)),
                ('version', models.CharField(help_text='the tag without `v` or suffix: 1.5.0-rc.1', max_length=128)),
                ('prerelease', models.BooleanField(default=False)),
                ('seen_at', models.DateTimeField(help_text='when the portal first saw the tag')),
                ('created_at', models.DateTimeField(blank=True, help_text="the image config's build time, when known", null=True)),
                ('digest', models.CharField(blank=True, help_text='manifest digest when first seen', max_length=100)),
                ('notes_url', models.URLField(blank=True, max_length=500, null=True)),
                ('notes', models.TextField(blank=True, default='', help_text="the forge release's notes (Markdown), shortened")),
                ('service', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='releases', to='catalog.service')),
            ],
            options={
                'db_table': 'delivery_release',
                'ordering': ['service', '-seen_at', 'tag'],
                'indexes': [models.Index(fields=['service', 'seen_at'], name='delivery_re_service_5262b5_idx')],
                'constraints': [models.UniqueConstraint(fields=('service', 'tag'), name='delivery_release_unique_tag')],
            },
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
