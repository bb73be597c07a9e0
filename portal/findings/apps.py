from django.apps import AppConfig


class FindingsConfig(AppConfig):
    name = "portal.findings"
    label = "findings"
    verbose_name = "Findings"

    def ready(self) -> None:
        from gitops.signals import cluster_stored
        from portal.findings import derivation

        # A poll's apps are judged again as they are stored, in the poll's transaction.
        cluster_stored.connect(derivation.on_cluster_stored, dispatch_uid="findings.derive")
