from django.contrib import admin

from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment, Service


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = ("name", "order", "production")


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "environment", "connection", "enabled", "discovered", "last_ok_at", "stale_since")
    list_filter = ("environment", "connection", "enabled", "discovered")
    readonly_fields = ("last_poll_at", "last_ok_at", "last_error", "stale_since", "last_poll_seconds", "unavailable")
    exclude = ("poll_lock_until", "poll_lock_token")


@admin.register(Service)
class ServiceAdmin(admin.ModelAdmin):
    list_display = ("name", "image_repository", "team", "source_repository")
    search_fields = ("name", "image_repository", "team", "source_repository")


@admin.register(ArgoCDInstance)
class ArgoCDInstanceAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster", "api_url", "ui_url", "agent_mapping")
    list_filter = ("agent_mapping",)
