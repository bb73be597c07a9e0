from django.apps import AppConfig


class GitopsConfig(AppConfig):
    name = "gitops"
    verbose_name = "GitOps (clusters)"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from gitops import app_order
        from portal.kernel.catalog.models import Cluster, Environment

        # The app lists' order keys copied onto each app row follow its cluster and environment.
        post_save.connect(app_order.on_cluster_saved, sender=Cluster, dispatch_uid="gitops.order.cluster")
        post_save.connect(app_order.on_environment_saved, sender=Environment, dispatch_uid="gitops.order.environment")
