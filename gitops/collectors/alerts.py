"""Which Flux Alerts would tell someone that an app failed (portal.findings reads the result).

A Flux Kustomization or HelmRelease that fails to reconcile emits an error event; only an
Alert of notification-controller whose ``eventSources`` name the object forwards it
anywhere. Read the way notification-controller matches (``v1beta3``/``v1beta2``):

- a source matches by ``kind``, ``name`` (``*`` for every object of the kind, then
  optionally narrowed by ``matchLabels``) and ``namespace`` (the Alert's own when empty);
- ``eventSeverity`` ``info`` (the default) forwards errors too, ``error`` forwards errors;
- a suspended Alert forwards nothing.

Pure: the poll passes the Alerts it listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gitops.rawobjects import as_bool, as_list, as_str, dig
from gitops.rows import FLUX, AppRow

ALERT_KIND = "Alert"


def _labels(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = dig(raw, "metadata", "labels")
    return labels if isinstance(labels, Mapping) else {}


def alert_covers(alert: Mapping[str, Any], row: AppRow) -> bool:
    spec = alert.get("spec")
    if not isinstance(spec, Mapping) or as_bool(spec.get("suspend")):
        return False
    if as_str(spec.get("eventSeverity")) not in ("", "info", "error"):
        return False
    alert_namespace = as_str(dig(alert, "metadata", "namespace"))
    for source in as_list(spec.get("eventSources")):
        if not isinstance(source, Mapping) or as_str(source.get("kind")) != row.kind:
            continue
        if (as_str(source.get("namespace")) or alert_namespace) != row.namespace:
            continue
        name = as_str(source.get("name"))
        if name == row.name:
            return True
        if name == "*":
            wanted = source.get("matchLabels")
            labels = _labels(row.raw)
            if not isinstance(wanted, Mapping) or all(labels.get(k) == v for k, v in wanted.items()):
                return True
    return False


def mark_alerts(apps: Iterable[AppRow], alerts: list[Any] | None) -> None:
    """Set each Flux app's ``flux_alerts`` (the Alerts forwarding its failures, by namespace/name);
    None when the Alerts could not be read (forbidden): then nobody knows."""
    for row in apps:
        if row.tool != FLUX:
            continue
        if alerts is None:
            row.flux_alerts = None
            continue
        row.flux_alerts = sorted(
            f"{as_str(dig(a, 'metadata', 'namespace'))}/{as_str(dig(a, 'metadata', 'name'))}"
            for a in alerts
            if isinstance(a, Mapping) and alert_covers(a, row)
        )
