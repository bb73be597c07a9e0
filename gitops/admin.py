from django.contrib import admin

from gitops.models import AppProject, ClusterPoll, GitOpsApp, HealthRule, StateChange, VersionChange, Workload


@admin.register(GitOpsApp)
class GitOpsAppAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster", "tool", "kind", "namespace", "sync_status", "health_status", "suspended")
    list_filter = ("tool", "sync_status", "health_status", "cluster")
    search_fields = ("name", "namespace", "repo_url")


@admin.register(ClusterPoll)
class ClusterPollAdmin(admin.ModelAdmin):
    """How each cluster's polls went (written by the polls only, so read-only here)."""

    list_display = ("cluster", "last_ok_at", "stale_since", "last_poll_seconds", "poll_warning_count")
    list_select_related = ("cluster",)
    readonly_fields = ("cluster", "last_poll_at", "last_ok_at", "last_error", "stale_since", "last_poll_seconds",
                       "unavailable", "poll_warning_count", "poll_warnings", "poll_started_at", "interrupted_at")
    exclude = ("poll_lock_until", "poll_lock_token", "listing_digest", "listing_full_at")

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False


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
