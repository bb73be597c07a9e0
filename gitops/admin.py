from django.contrib import admin

from gitops.models import AppProject, GitOpsApp, StateChange, VersionChange, Workload


@admin.register(GitOpsApp)
class GitOpsAppAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster", "tool", "kind", "namespace", "sync_status", "health_status", "suspended")
    list_filter = ("tool", "sync_status", "health_status", "cluster")
    search_fields = ("name", "namespace", "repo_url")


admin.site.register(AppProject)
admin.site.register(Workload)
admin.site.register(StateChange)
admin.site.register(VersionChange)
