"""Keyset ("cursor") pagination: a page starts strictly after the last row of the one before.

A cursor holds the sort key values of a row (the last key is always the unique id), so
rows inserted or removed elsewhere never shift a page, unlike offsets. A page's ids come
from one `WHERE (k1, k2, …) > (v1, v2, …) ORDER BY k1, k2, … LIMIT n+1` query.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from portal.api.errors import bad_request

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
_TYPES: dict[str, type] = {"int": int, "str": str, "datetime": datetime}


@dataclass(frozen=True)
class Ordering:
    """A sort as the queryset holds it: key attributes with their types, all in one direction."""

    name: str  # as written in ?sort=, e.g. "-sync_since"
    keys: tuple[tuple[str, str], ...]  # (attribute, "int" | "str" | "datetime"); the last is unique
    descending: bool = False

    def order_by(self, backwards: bool) -> list[str]:
        flip = self.descending != backwards
        return [("-" if flip else "") + key for key, _ in self.keys]

    def after(self, values: list[Any], backwards: bool) -> Q:
        """Rows strictly past `values` in the direction of travel."""
        lookup = "lt" if self.descending != backwards else "gt"
        condition = Q()
        for i, (key, _) in enumerate(self.keys):
            equal = {k: v for (k, _), v in zip(self.keys[:i], values[:i], strict=True)}
            condition |= Q(**equal, **{f"{key}__{lookup}": values[i]})
        return condition

    def values_of(self, row: Any) -> list[Any]:
        return [getattr(row, key) for key, _ in self.keys]


@dataclass(frozen=True)
class Cursor:
    sort: str
    values: list[Any]
    backwards: bool = False

    def encode(self) -> str:
        values = [{"t": v.isoformat()} if isinstance(v, datetime) else v for v in self.values]
        text = json.dumps({"s": self.sort, "v": values, "b": self.backwards}, separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str, ordering: Ordering) -> Cursor:
        invalid = bad_request("invalid_cursor", "The cursor is not one this API gave out; start from the first page.")
        try:
            data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
            sort, raw, backwards = data["s"], data["v"], data["b"]
        except (ValueError, TypeError, KeyError, binascii.Error):
            raise invalid
        if sort != ordering.name:
            raise bad_request(
                "invalid_cursor", "The cursor belongs to another sort order; start from the first page of this one.",
                {"cursor_sort": str(sort)[:40], "sort": ordering.name},
            )
        if not isinstance(raw, list) or len(raw) != len(ordering.keys) or not isinstance(backwards, bool):
            raise invalid
        values = []
        for value, (_, kind) in zip(raw, ordering.keys, strict=True):
            if kind == "datetime":
                try:
                    value = datetime.fromisoformat(value["t"])
                except (TypeError, KeyError, ValueError):
                    raise invalid
                if value.tzinfo is None:
                    raise invalid
            elif type(value) is not _TYPES[kind]:  # noqa: E721 - bool is an int subclass; refuse it
                raise invalid
            values.append(value)
        return cls(sort, values, backwards)


@dataclass(frozen=True)
class Page:
    """One page of rows, and the cursors to the pages on either side (None at an end)."""

    rows: list[Any]
    next: Cursor | None
    previous: Cursor | None


def keyset_page(queryset: QuerySet, ordering: Ordering, cursor_text: str | None, size: int) -> Page:
    """The `size` rows of `queryset` in `ordering` after the position `cursor_text` names (from the
    start without one). The paginator's answer, for callers without a request (the MCP tools)."""
    cursor = Cursor.decode(cursor_text, ordering) if cursor_text else None
    backwards = bool(cursor and cursor.backwards)
    rows = queryset.order_by(*ordering.order_by(backwards))
    if cursor is not None:
        rows = rows.filter(ordering.after(cursor.values, backwards))
    # Two steps: pick the page's ids with a narrow sort, then load the full rows for those
    # ids only. A database sorts whole result rows, so one step would compute every
    # annotation and carry every column of the whole fleet through the sort.
    ids = list(rows.values_list("pk", flat=True)[: size + 1])
    more = len(ids) > size
    # Unordered: the ids give the order, so sorting the rows again in SQL is work for nothing.
    # (On a table never analyzed the lookup may still walk a whole index: docs/postgresql-at-100k.md.)
    loaded = {row.pk: row for row in queryset.order_by().filter(pk__in=ids[:size])}
    page = [loaded[pk] for pk in ids[:size] if pk in loaded]  # a row deleted in between is skipped
    if backwards:
        page.reverse()
    next_cursor = previous_cursor = None
    if page:
        first, last = ordering.values_of(page[0]), ordering.values_of(page[-1])
        # Going back, the page we came from is always there; going forward, only if we saw it.
        if backwards or more:
            next_cursor = Cursor(ordering.name, last)
        if (cursor is not None and not backwards) or (backwards and more):
            previous_cursor = Cursor(ordering.name, first, backwards=True)
    return Page(page, next_cursor, previous_cursor)


class KeysetPagination(BasePagination):
    """Pages a queryset in the order the view names with `get_ordering()`."""

    cursor_query_param = "cursor"
    page_size_query_param = "page_size"
    query_params = (cursor_query_param, page_size_query_param)

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> list[Any]:
        size = self._page_size(request)
        page = keyset_page(queryset, view.get_ordering(), request.query_params.get(self.cursor_query_param), size)
        self.request = request
        self.next_cursor, self.previous_cursor = page.next, page.previous
        return page.rows

    def _page_size(self, request: Request) -> int:
        text = request.query_params.get(self.page_size_query_param)
        if text is None:
            return DEFAULT_PAGE_SIZE
        if not text.isdigit() or not 1 <= int(text) <= MAX_PAGE_SIZE:
            raise bad_request(
                "invalid_parameters", f"page_size must be a whole number from 1 to {MAX_PAGE_SIZE}.",
                {"page_size": [f"Expected 1 to {MAX_PAGE_SIZE}."]},
            )
        return int(text)

    def _link(self, cursor: Cursor | None) -> str | None:
        if cursor is None:
            return None
        return replace_query_param(self.request.build_absolute_uri(), self.cursor_query_param, cursor.encode())

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"next": self._link(self.next_cursor), "previous": self._link(self.previous_cursor),
                         "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        link = {"type": "string", "format": "uri", "nullable": True}
        return {
            "type": "object",
            "required": ["next", "previous", "results"],
            "properties": {
                "next": {**link, "description": "The next page, or null on the last one."},
                "previous": {**link, "description": "The page before, or null on the first one."},
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param, "required": False, "in": "query",
                "description": "Opaque position from a `next` or `previous` link; omit for the first page.",
                "schema": {"type": "string"},
            },
            {
                "name": self.page_size_query_param, "required": False, "in": "query",
                "description": f"Items per page (default {DEFAULT_PAGE_SIZE}).",
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": DEFAULT_PAGE_SIZE},
            },
        ]
