from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "portal.delivery"
    label = "delivery"
    verbose_name = "Delivery"
