"""What the lists of GitOps apps can filter and sort on: one FilterSet (django-filter) for
the /gitops page and GET /api/v1/gitops, so a filter means the same and has the same name
in a shared link and in a script.

The page's names are the canonical ones (they are what people bookmark); the API's older
`needs_attention` stays accepted as an alias of `attention`. The page ignores a value it
cannot read (a stale bookmark still opens); the API refuses it (django-filter's DRF backend
raises on an invalid form), so a script learns of its mistake.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from gitops.derive.attention import ATTENTION_HEALTH, OUT_OF_SYNC
from gitops.models import APP_SORTS, TOOLS, GitOpsApp, GitOpsAppQuerySet
from gitops.rows import DEGRADED, HEALTHY, MISSING, PROGRESSING, SUSPENDED, SYNCED, UNKNOWN

SYNC_STATUSES = [SYNCED, OUT_OF_SYNC, UNKNOWN]
HEALTH_STATUSES = [HEALTHY, PROGRESSING, DEGRADED, SUSPENDED, MISSING, UNKNOWN]
# Cluster, environment and service names: what the catalog allows, nothing that could smuggle a path.
SLUG = r"^[-a-zA-Z0-9_]+$"
SORTS = list(APP_SORTS)
SORT_CHOICES = [*SORTS, *(f"-{name}" for name in SORTS)]
SEARCH_MAX = 200  # longer search text is cut, not refused: it is typed by people
# The text search's columns. On PostgreSQL they are searched as one text, joined by a line
# break (no search box sends one, so nothing matches across two columns), which a trigram
# index (migration 0009_app_search_trigram) serves: one index instead of five, and a
# search for a name among 50,000 apps reads the rows that hold it, not every row. The
# expression is the index's own, character for character: the planner matches it so.
SEARCHED_COLUMNS = ("name", "namespace", "repo_url", "path", "chart")
SEARCH_SQL = " || chr(10) || ".join(SEARCHED_COLUMNS)

# The page's status menu: each a condition on the stored state ("blocked" depends on the time).
STATUS_FILTERS = {
    "degraded": Q(health_status__in=ATTENTION_HEALTH),
    "missing": Q(health_status=MISSING),
    "outofsync": Q(sync_status=OUT_OF_SYNC),
    "progressing": Q(health_status=PROGRESSING),
    "healthy": Q(health_status=HEALTHY, sync_status=SYNCED),
    "suspended": Q(suspended=True),
    "manual": Q(manual_sync=True),
}
BLOCKED = "blocked"
STATUSES = [*STATUS_FILTERS, BLOCKED]
# Old name -> the name that replaced it; both work, the API's schema marks the old one deprecated.
DEPRECATED_ALIASES = {"needs_attention": "attention"}


class YesNoField(forms.Field):
    """true/false (a script's spelling) or 1/0 (a checkbox's). Anything else is an error, not
    "no filter": django-filter's own boolean fields read `maybe` as absent."""

    def to_python(self, value: Any) -> bool | None:
        if value in self.empty_values:
            return None
        text = str(value).lower()
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise ValidationError("Expected true or false.", code="invalid")


class YesNoFilter(django_filters.BooleanFilter):
    field_class = YesNoField


def _name(help_text: str, field_name: str, max_length: int) -> django_filters.CharFilter:
    # Not stripped: " prod" is no name, and is refused rather than read as "prod" or as "all".
    return django_filters.CharFilter(field_name=field_name, max_length=max_length, help_text=help_text,
                                     validators=[RegexValidator(SLUG)], strip=False)


class GitOpsAppFilter(django_filters.FilterSet):
    """Filters combine with AND; the order is problems first unless `sort` names another.

    `at` is the instant time-dependent filters (attention, blocked) are judged at.
    """

    cluster = _name("cluster name", "cluster__name", 63)
    environment = _name("environment name", "cluster__environment__name", 63)
    service = _name("apps deploying this service", "services__name", 100)  # one link per (app, service)
    tool = django_filters.ChoiceFilter(choices=TOOLS)
    project = django_filters.CharFilter(max_length=253, help_text="Argo CD AppProject")
    sync = django_filters.ChoiceFilter(field_name="sync_status", choices=[(s, s) for s in SYNC_STATUSES],
                                       help_text="sync status")
    health = django_filters.ChoiceFilter(field_name="health_status", choices=[(s, s) for s in HEALTH_STATUSES],
                                         help_text="health status")
    status = django_filters.ChoiceFilter(
        choices=[(s, s) for s in STATUSES], method="filter_status",
        help_text="the /gitops page's status menu: degraded (or missing), missing, outofsync, progressing, healthy "
        "(and synced), suspended, manual (sync), blocked (by a sync window or a suspension, now)",
    )
    q = django_filters.CharFilter(method="filter_text", help_text="text in the name, namespace, repository, path "
                                  f"or chart (the first {SEARCH_MAX} characters)")
    attention = YesNoFilter(
        method="filter_attention",
        help_text="true: only apps needing attention (out of sync, degraded or missing past the grace period); "
        "false: only the others",
    )
    # The API's name before the page's and the API's were made one; kept for existing scripts.
    needs_attention = YesNoFilter(method="filter_attention", help_text="Deprecated alias of `attention`.")
    sort = django_filters.ChoiceFilter(
        choices=[(s, s) for s in SORT_CHOICES], method="filter_sort",
        help_text="problems (default): degraded and missing first. A leading '-' reverses.",
    )

    class Meta:
        model = GitOpsApp
        fields: list[str] = []

    def __init__(self, data: Any = None, queryset: Any = None, *, at: datetime | None = None, **kwargs: Any) -> None:
        super().__init__(data, queryset, **kwargs)
        self.at = at or timezone.now()

    def get_form_class(self) -> Any:
        # The form depends only on the declared filters, never on the request: build it once
        # per class instead of on every request (it cost a third of a filtered page's filtering).
        built = type(self).__dict__.get("_built_form_class")
        if built is None:
            built = super().get_form_class()
            type(self)._built_form_class = built  # type: ignore[attr-defined]
        return built

    def filter_queryset(self, queryset: GitOpsAppQuerySet) -> GitOpsAppQuerySet:
        return super().filter_queryset(queryset.problems_first())

    def filter_status(self, apps: GitOpsAppQuerySet, name: str, value: str) -> GitOpsAppQuerySet:
        return apps.blocked(self.at) if value == BLOCKED else apps.filter(STATUS_FILTERS[value])

    def filter_text(self, apps: GitOpsAppQuerySet, name: str, value: str) -> GitOpsAppQuerySet:
        text = value[:SEARCH_MAX]
        # A line break is the joint of the columns: such a (pasted) text is searched column by column.
        if connection.vendor == "postgresql" and "\n" not in text:
            table = GitOpsApp._meta.db_table
            # Qualified: the lists join the cluster, which has a `name` too.
            joined = " || chr(10) || ".join(f'"{table}"."{column}"' for column in SEARCHED_COLUMNS)
            pattern = f"%{connection.ops.prep_for_like_query(text)}%"
            # Column names from the model, the text as a parameter.
            condition = RawSQL(f"({joined}) ILIKE %s", [pattern], output_field=BooleanField())  # noqa: S611
            return apps.filter(condition)
        return apps.filter(Q.create([(f"{column}__icontains", text) for column in SEARCHED_COLUMNS],
                                    connector=Q.OR))

    def filter_attention(self, apps: GitOpsAppQuerySet, name: str, value: bool) -> GitOpsAppQuerySet:
        return apps.needing_attention(self.at) if value else apps.not_needing_attention(self.at)

    def filter_sort(self, apps: GitOpsAppQuerySet, name: str, value: str) -> GitOpsAppQuerySet:
        return apps.sorted_by(value)
