"""Version policies take regex allow and ignore lists: `allow_tags` becomes a list (a stored
regex becomes a list of one) and `ignore_tags` is added. Done as add / copy / remove / rename
so it works the same on SQLite and PostgreSQL, whose varchar -> jsonb cast would refuse a bare
regex."""

from django.db import migrations, models


def to_lists(apps, schema_editor):
    ServicePolicy = apps.get_model("delivery", "ServicePolicy")
    for row in ServicePolicy.objects.exclude(allow_tags=""):
        row.allow_tags_list = [row.allow_tags]
        row.save(update_fields=["allow_tags_list"])


def to_strings(apps, schema_editor):
    ServicePolicy = apps.get_model("delivery", "ServicePolicy")
    for row in ServicePolicy.objects.all():
        patterns = [p for p in row.allow_tags_list or [] if p]
        # One regex that matches when any of them does.
        row.allow_tags = patterns[0] if len(patterns) == 1 else "|".join(f"(?:{p})" for p in patterns)
        row.save(update_fields=["allow_tags"])


class Migration(migrations.Migration):
    dependencies = [("delivery", "0006_pullrequest_moved")]

    operations = [
        migrations.AddField(
            model_name="servicepolicy",
            name="allow_tags_list",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(to_lists, to_strings),
        migrations.RemoveField(model_name="servicepolicy", name="allow_tags"),
        migrations.RenameField(model_name="servicepolicy", old_name="allow_tags_list", new_name="allow_tags"),
        migrations.AlterField(
            model_name="servicepolicy",
            name="allow_tags",
            field=models.JSONField(blank=True, default=list, help_text="regular expressions; a tag must contain one"),
        ),
        migrations.AddField(
            model_name="servicepolicy",
            name="ignore_tags",
            field=models.JSONField(blank=True, default=list,
                                   help_text="regular expressions; a tag containing one is skipped"),
        ),
        migrations.AlterField(
            model_name="servicepolicy",
            name="labels",
            field=models.JSONField(blank=True, default=list, help_text="pr_labels"),
        ),
        migrations.AlterField(
            model_name="servicepolicy",
            name="reviewers",
            field=models.JSONField(blank=True, default=list, help_text="pr_reviewers: logins and @org/team"),
        ),
    ]
