from django.contrib import admin

from portal.kernel.audit.models import AuditLog


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    list_display = ("at", "actor_name", "team", "action", "target")
    list_filter = ("action", "team")
    search_fields = ("actor_name", "team", "target")
    readonly_fields = ("actor", "actor_name", "team", "action", "target", "details", "at")

    def has_add_permission(self, request):  # an audit trail is written by the portal only
        return False

    def has_change_permission(self, request, obj=None):
        return False
