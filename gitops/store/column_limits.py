"""Values cut to the columns that hold them: one bad string never fails a cluster's write.

The API server validates what it stores (names ≤ 253 characters, statuses from fixed sets),
but manifest folders, hand-written snapshots, CRDs without schemas and proxies do not: a
300-character `spec.project` or Flux `interval` is text PostgreSQL refuses for a
varchar(253) or varchar(32), and the whole poll's transaction with it (SQLite stores it
silently). Every row a poll writes passes through `fitted`, which cuts each string to its
CharField's max_length, so the limit is read from the model and defined once.
Identity columns (kind, namespace, name, uid) are not cut here: a collector skips an object
whose identity does not fit (gitops.collectors), since a cut name could collide with another.
"""

from __future__ import annotations

from typing import Any

from django.db import models

_LIMITS: dict[str, dict[str, int]] = {}


def char_limits(model: type[models.Model]) -> dict[str, int]:
    """{field name: max_length} of the model's CharFields (read once per model)."""
    label = model._meta.label
    if label not in _LIMITS:
        _LIMITS[label] = {
            f.name: f.max_length
            for f in model._meta.get_fields()
            if isinstance(f, models.CharField) and f.max_length is not None
        }
    return _LIMITS[label]


def fitted(model: type[models.Model], values: dict[str, Any]) -> dict[str, Any]:
    """`values` with every string longer than its CharField cut to the column's length."""
    limits = char_limits(model)
    for name, value in values.items():
        limit = limits.get(name)
        if limit is not None and isinstance(value, str) and len(value) > limit:
            values[name] = value[:limit]
    return values
