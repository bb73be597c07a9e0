from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "portal.kernel.audit"
    label = "audit"
