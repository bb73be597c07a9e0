from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "portal.kernel.catalog"
    label = "catalog"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from portal.kernel.catalog import revision
        from portal.kernel.catalog.models import Cluster, Service

        for model in (Service, Cluster):
            post_save.connect(revision.on_catalog_change, sender=model,
                              dispatch_uid=f"catalog.revision.save.{model.__name__}")
            post_delete.connect(revision.on_catalog_change, sender=model,
                                dispatch_uid=f"catalog.revision.delete.{model.__name__}")
