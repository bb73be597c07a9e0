from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "portal.notifications"
    label = "notifications"

    def ready(self) -> None:
        from gitops.signals import cluster_stored
        from portal.notifications import finding_rules

        # Which apps a portal rule would tell about a failure, handed down to portal.findings as a poll stores them.
        cluster_stored.connect(finding_rules.on_cluster_stored, dispatch_uid="notify.findings")
