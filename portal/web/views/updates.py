"""/updates lives with the delivery flows (portal.delivery.views_updates); the URL name stays here."""

from __future__ import annotations

from portal.delivery.views_updates import updates

__all__ = ["updates"]
