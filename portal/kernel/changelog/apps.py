from django.apps import AppConfig


class ChangelogConfig(AppConfig):
    name = "portal.kernel.changelog"
    label = "changelog"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from portal.kernel import pgtimestamps
        from portal.kernel.changelog import marks

        connection_created.connect(marks.watch_connection, dispatch_uid="changelog.watch")
        # The kernel's other per-connection set-up: timestamps read at C speed.
        connection_created.connect(pgtimestamps.install, dispatch_uid="kernel.pgtimestamps")
