"""PullRequest moved here from forges (it carries delivery's facts: environment, services,
running_at). Its table keeps its name (forges_pullrequest), so this migration only tells
Django's state; the database is untouched. forges.0002 removes it from forges' state."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('delivery', '0005_releases_moved'),
        ('forges', '0001_pullrequest'),  # the table exists from forges' migration
    ]

    state_operations = [
        migrations.CreateModel(
            name='PullRequest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('upgrade', 'Upgrade'), ('promotion', 'Promotion'), ('rollback', 'Rollback')], max_length=16)),
                ('services', models.JSONField(default=list, help_text='service names')),
                ('environment', models.CharField(blank=True, max_length=63)),
                ('clusters', models.JSONField(blank=True, default=list, help_text='cluster names')),
                ('repository', models.CharField(help_text="the repository's web URL", max_length=500)),
                ('forge_kind', models.CharField(max_length=16)),
                ('number', models.PositiveIntegerField(blank=True, null=True)),
                ('url', models.URLField(blank=True, max_length=500)),
                ('title', models.CharField(max_length=300)),
                ('branch', models.CharField(max_length=255)),
                ('base_branch', models.CharField(max_length=255)),
                ('state', models.CharField(choices=[('opening', 'Opening'), ('open', 'Open'), ('merged', 'Merged'), ('closed', 'Closed')], db_index=True, default='opening', max_length=16)),
                ('checks', models.CharField(choices=[('pass', 'Pass'), ('running', 'Running'), ('fail', 'Fail'), ('none', 'None')], default='none', max_length=16)),
                ('checks_failed_notified_at', models.DateTimeField(blank=True, null=True)),
                ('automatic', models.BooleanField(default=False)),
                ('opened_at', models.DateTimeField(blank=True, null=True)),
                ('merged_at', models.DateTimeField(blank=True, null=True)),
                ('closed_at', models.DateTimeField(blank=True, null=True)),
                ('running_at', models.DateTimeField(blank=True, null=True)),
                ('opened_outside', models.BooleanField(default=False, help_text='opened by Renovate, Dependabot or a person')),
                ('from_version', models.CharField(blank=True, max_length=128)),
                ('to_version', models.CharField(blank=True, max_length=128)),
                ('image', models.CharField(blank=True, max_length=300)),
                ('last_error', models.TextField(blank=True)),
                ('tracked_at', models.DateTimeField(blank=True, null=True)),
                ('opened_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'forges_pullrequest',
                'ordering': ['-opened_at', '-id'],
                'constraints': [models.UniqueConstraint(fields=('repository', 'branch'), name='forges_pullrequest_unique_branch')],
            },
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
