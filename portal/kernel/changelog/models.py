"""One row per committed change of what the pages show (portal.kernel.changelog.marks)."""

from __future__ import annotations

from django.db import models


class DataChange(models.Model):
    id = models.BigAutoField(primary_key=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"change {self.id}"
