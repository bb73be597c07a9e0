from django.contrib import admin

from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment, Service


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = ("name", "order", "production")


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    # How its polls went is gitops.ClusterPoll's, in gitops' admin.
    list_display = ("name", "environment", "connection", "enabled", "discovered")
    list_filter = ("environment", "connection", "enabled", "discovered")


@admin.register(Service)
class ServiceAdmin(admin.ModelAdmin):
    list_display = ("name", "image_repository", "team", "source_repository")
    search_fields = ("name", "image_repository", "team", "source_repository")


@admin.register(ArgoCDInstance)
class ArgoCDInstanceAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster", "api_url", "ui_url", "agent_mapping")
    list_filter = ("agent_mapping",)
