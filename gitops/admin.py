from django.contrib import admin

from gitops.models import AppProject, GitOpsApp, HealthRule, StateChange, VersionChange, Workload


@admin.register(GitOpsApp)
class GitOpsAppAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster", "tool", "kind", "namespace", "sync_status", "health_status", "suspended")
    list_filter = ("tool", "sync_status", "health_status", "cluster")
    search_fields = ("name", "namespace", "repo_url")


admin.site.register(AppProject)
admin.site.register(Workload)
admin.site.register(StateChange)
admin.site.register(VersionChange)


@admin.register(HealthRule)
class HealthRuleAdmin(admin.ModelAdmin):
    """Portal-side health rules: used after the tool's own, for kinds it has none for."""

    list_display = ("kind", "group", "language", "enabled", "updated_at")
    list_filter = ("language", "enabled")
    search_fields = ("group", "kind", "note")
