from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "portal.notifications"
    label = "notifications"

    def ready(self) -> None:
        from portal.delivery import signals
        from portal.notifications import delivery_events

        # Delivery announces; notifications decide who hears of it (delivery imports nothing above it).
        signals.merged_not_deployed.connect(delivery_events.on_merged_not_deployed, dispatch_uid="notify.not_deployed")
        signals.pr_checks_failed.connect(delivery_events.on_pr_checks_failed, dispatch_uid="notify.checks_failed")
        signals.rollback_offered.connect(delivery_events.on_rollback_offered, dispatch_uid="notify.rollback")

        from gitops.signals import finding_context
        from portal.notifications import finding_rules

        # Findings ask which apps a portal rule would tell someone about (gitops imports nothing above it).
        finding_context.connect(finding_rules.on_finding_context, dispatch_uid="notify.findings")
