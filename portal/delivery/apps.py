from django.apps import AppConfig


class DeliveryConfig(AppConfig):
    name = "portal.delivery"
    label = "delivery"
    verbose_name = "Delivery"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save, pre_save

        from gitops.signals import cluster_stored
        from portal.delivery import policy_editing, version_matrix
        from portal.kernel.catalog.fleetfile import service_loaded
        from portal.kernel.catalog.models import Cluster

        # The matrix's read model derives from what each poll stores and from the clusters
        # themselves (portal.delivery.version_matrix).
        cluster_stored.connect(version_matrix.on_cluster_stored, dispatch_uid="delivery.placements")

        pre_save.connect(version_matrix.remember_cluster, sender=Cluster, dispatch_uid="delivery.lines.pre")
        post_save.connect(version_matrix.on_cluster_saved, sender=Cluster, dispatch_uid="delivery.lines.post")
        post_delete.connect(version_matrix.on_cluster_deleted, sender=Cluster, dispatch_uid="delivery.lines.delete")
        # A service's `policy:` in the fleet file is its version policy (checked and audited).
        service_loaded.connect(policy_editing.on_fleet_service, dispatch_uid="delivery.policies.fleet")
