"""Django admin: channels without their secrets (the URL and the HMAC secret are never shown)."""

from __future__ import annotations

from django.contrib import admin

from portal.notifications.models import Channel, Delivery, Episode, Rule


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "masked_target", "last_sent_at", "last_error_at")
    # Secrets are set on /notifications/, where they are write-only.
    fields = ("name", "kind", "masked_target", "recipients", "last_sent_at", "last_error", "last_error_at")
    readonly_fields = ("masked_target", "last_sent_at", "last_error", "last_error_at")


@admin.register(Rule)
class RuleAdmin(admin.ModelAdmin):
    list_display = ("name", "channel", "environment", "cluster", "service", "enabled")


@admin.register(Episode)
class EpisodeAdmin(admin.ModelAdmin):
    list_display = ("key", "kind", "started_at", "emitted_at", "ended_at")
    readonly_fields = ("kind", "key", "started_at", "emitted_at", "ended_at", "app", "payload")


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("episode", "rule", "channel", "status", "attempts", "last_error")
    list_filter = ("status",)
    readonly_fields = [f.name for f in Delivery._meta.fields]
