from django.apps import AppConfig


class AssistantConfig(AppConfig):
    name = "portal.assistant"
    label = "assistant"
