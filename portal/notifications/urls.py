from django.urls import path

from portal.notifications import views

urlpatterns = [
    path("", views.index, name="notifications"),
    path("channels/form", views.channel_form, name="notification-channel-form"),
    path("channels/test", views.channel_test, name="notification-channel-test"),
    path("channels/delete", views.channel_delete, name="notification-channel-delete"),
    path("rules/form", views.rule_form, name="notification-rule-form"),
    path("rules/delete", views.rule_delete, name="notification-rule-delete"),
]
