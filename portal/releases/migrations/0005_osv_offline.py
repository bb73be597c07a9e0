"""OSV's exported records kept in the database (portal.releases.osv_offline): the lookup for air-gapped installs."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('releases', '0004_supply_chain'),
    ]

    operations = [
        migrations.CreateModel(
            name='OfflineAdvisory',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('osv_id', models.CharField(max_length=100, unique=True)),
                ('modified', models.CharField(blank=True, max_length=40)),
                ('withdrawn', models.BooleanField(default=False, help_text='OSV withdrew it: it matches nothing')),
                ('record', models.JSONField()),
                ('imported_at', models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name='OfflinePackage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('ecosystem', models.CharField(help_text="OSV's ecosystem without a release: Debian, not Debian:12", max_length=40)),
                ('name', models.CharField(max_length=300)),
                ('advisory', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='packages', to='releases.offlineadvisory')),
            ],
            options={
                'indexes': [models.Index(fields=['ecosystem', 'name'], name='releases_of_ecosyst_dbaa95_idx')],
            },
        ),
    ]
