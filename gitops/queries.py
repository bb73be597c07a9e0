"""Read queries over GitOpsApp that the ORM cannot make cheap enough for the pages: the one
raw SQL read of the applications that need attention, rows read by the ids a subquery
yields or a long list names, timestamps read as epoch seconds, and the project names the filters offer.

Each must keep a good plan on tables filled a moment ago, before any ANALYZE: PostgreSQL then
takes gitops_gitopsapp for one row (EXPLAIN: rows=1 on 100,000), as its assumed row width passes
a page, and happily loops over all of it inside a join.

Pages call these (portal.web.fleet, portal.web.tiles); the conditions are the attention rule's
own (gitops.derive.attention), compiled by the ORM (`app_condition_sql` below), so nothing here judges a
state again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from operator import attrgetter
from typing import Any, NamedTuple, TypeVar

from django.db import connection
from django.db.models import BigIntegerField, BooleanField, F, FloatField, Func, Model, Q, QuerySet, Value
from django.db.models.base import ModelState

from gitops.derive.attention import Attention
from gitops.models import GitOpsApp
from portal.kernel.catalog.models import Cluster

M = TypeVar("M", bound=Model)


def app_condition_sql(condition: Q) -> tuple[str, list[Any]]:
    """`condition`, a Q over GitOpsApp's own columns, as SQL on its table (columns qualified
    by the table's name) with its parameters: for a raw query read through a plain cursor.
    The ORM compiles it, so the SQL says exactly what the Q says, parameters adapted as the
    ORM would pass them."""
    query = GitOpsApp.objects.filter(condition).query
    sql, params = query.where.as_sql(query.get_compiler(connection=connection), connection)
    return f"({sql})", list(params)


# A timestamp as seconds since 1970, per database; `%(expressions)s` is the column.
_EPOCH_SQL = {
    "postgresql": "CAST(EXTRACT(EPOCH FROM %(expressions)s) AS double precision)",
    "sqlite": "((julianday(%(expressions)s) - 2440587.5) * 86400.0)",
}


class EpochSeconds(Func):
    """A timestamp as seconds since 1970 (a float): the driver reads a float in C, where
    Django reads each timestamptz through Python, which made a thousand problems cost
    more than the query that found them."""

    output_field = FloatField()

    def as_postgresql(self, compiler, connection, **extra):  # type: ignore[no-untyped-def]
        return self.as_sql(compiler, connection, template=_EPOCH_SQL["postgresql"], **extra)

    def as_sqlite(self, compiler, connection, **extra):  # type: ignore[no-untyped-def]
        return self.as_sql(compiler, connection, template=_EPOCH_SQL["sqlite"], **extra)


@lru_cache(maxsize=1 << 16)
def stamp(seconds: float | None) -> datetime | None:
    """An `EpochSeconds` value back as an aware datetime, to the millisecond: SQLite's julianday
    arithmetic gives 07:42:00 back as 07:41:59.9999, which a page said as 07:41. Remembered: the
    matrix turns 30,000 of them into datetimes where a third of a fleet drifts, most of them the
    few instants a cluster's poll first saw its apps' states (an eighth of the page)."""
    return None if seconds is None else datetime.fromtimestamp(round(seconds, 3), UTC)


def _epoch(column: str) -> str:
    """SQL for a timestamp column as seconds since 1970 (`EpochSeconds` for raw SQL)."""
    return _EPOCH_SQL[connection.vendor] % {"expressions": column}


class AttentionRow(NamedTuple):
    """One (service, application) that needs attention, with which halves of the rule hold.
    Times are epoch seconds (`stamp` turns them into datetimes)."""

    service_id: int
    cluster_id: int
    cluster: str
    tool: str
    name: str
    sync_since: float | None
    health_status: str
    health_since: float | None
    operation_started_at: float | None
    operation_finished_at: float | None
    operation_phase: str
    unhealthy: bool
    out_of_sync: bool
    stuck: bool
    sync_failed: bool
    disagreeing: bool
    health_disagreement_since: float | None
    health_disagreement: str
    sync_since_exact: bool
    health_since_exact: bool


def attention_rows(rule: Attention, service_ids: Iterable[int] | None = None) -> list[AttentionRow]:
    """The applications that need attention under `rule`, a row per service they deploy, in the
    order of cluster and application names; of `service_ids` only, when given (a page of the
    matrix). One query over the few apps that need attention, whatever the fleet size, and one
    for the clusters' names. Written as SQL and read through a plain cursor: for a thousand
    problems the ORM's query building and per-value conversion cost more than the query.

    The SQL joins only the application links and neither sorts nor names clusters: on tables
    filled a moment ago (no statistics yet) the planner takes the apps for one row and, to read
    clusters already in name order, looped over all of them for every cluster (0.7 s at
    100,000 apps; 46 s for the overview's like query). From the apps, the only join left goes
    through the links' index whatever the estimates; the few rows are named and sorted here."""
    unhealthy, unhealthy_params = app_condition_sql(rule.unhealthy_q())
    out_of_sync, out_of_sync_params = app_condition_sql(rule.out_of_sync_q())
    stuck, stuck_params = app_condition_sql(rule.stuck_q())
    failed, failed_params = app_condition_sql(rule.sync_failed_q())
    disagreeing, disagreeing_params = app_condition_sql(rule.disagreement_q())
    params = [*unhealthy_params, *out_of_sync_params, *stuck_params, *failed_params, *disagreeing_params]
    app = GitOpsApp._meta.db_table
    columns = f"""
        s.service_id, {app}.cluster_id, {app}.tool, {app}.name,
        {_epoch(f"{app}.sync_since")}, {app}.health_status, {_epoch(f"{app}.health_since")},
        {_epoch(f"{app}.operation_started_at")}, {_epoch(f"{app}.operation_finished_at")},
        {app}.operation_phase, {unhealthy}, {out_of_sync}, {stuck}, {failed},
        {disagreeing}, {_epoch(f"{app}.health_disagreement_since")}, {app}.health_disagreement,
        {app}.sync_since_exact, {app}.health_since_exact"""
    either = f"({unhealthy} OR {out_of_sync} OR {stuck} OR {failed} OR {disagreeing})"
    found = _attention_query(columns, params, either, params, service_ids)
    names = dict(Cluster.objects.values_list("id", "name"))
    make = AttentionRow._make  # tuple.__new__ itself: the class's own constructor binds 21 arguments
    rows = [make((row[0], row[1], names.get(row[1], ""), *row[2:])) for row in found]
    rows.sort(key=attrgetter("cluster", "name"))
    return rows


# (service id, cluster id, application id, application name, unhealthy, out of sync): one
# (service, application) unhealthy or out of sync, as the overview ranks its tiles' flags before
# it reads the few it shows. Plain tuples: 30,000 named ones cost a tenth of the page.
ProblemRow = tuple[int, int, int, str, bool, bool]


def problem_rows(rule: Attention) -> list[ProblemRow]:
    """The (service, application) pairs unhealthy or out of sync under `rule`, unordered: six
    small columns a row. A fleet where a third of the apps drift out of sync has 30,000 of them;
    read whole (`attention_rows`: twenty columns, five timestamps made epoch seconds) they were
    three quarters of the overview's 300 ms, of which it shows four a service."""
    unhealthy, unhealthy_params = app_condition_sql(rule.unhealthy_q())
    out_of_sync, out_of_sync_params = app_condition_sql(rule.out_of_sync_q())
    app = GitOpsApp._meta.db_table
    return _attention_query(f"s.service_id, {app}.cluster_id, {app}.id, {app}.name, {unhealthy}, {out_of_sync}",
                            [*unhealthy_params, *out_of_sync_params], f"({unhealthy} OR {out_of_sync})",
                            [*unhealthy_params, *out_of_sync_params])


def _attention_query(columns: str, column_params: list[Any], condition: str, condition_params: list[Any],
                     service_ids: Iterable[int] | None = None) -> list[tuple]:
    """`columns` of the (service link, application) pairs meeting `condition`, a part of the
    attention rule (of `service_ids` only, when given): joined to the links alone, and narrowed
    by the rule's clock-free half so that the partial index over it answers (a plan that scanned
    every app's row, raw objects and all, cost more than the rest of the matrix)."""
    candidates, candidates_params = app_condition_sql(Attention.candidates_q())
    app, link = GitOpsApp._meta.db_table, GitOpsApp.services.through._meta.db_table
    chosen, chosen_params = "", list[Any]()
    if service_ids is not None:
        listed = sorted(set(service_ids))
        if not listed:
            return []
        if connection.vendor == "postgresql":  # one array parameter, not a literal each (see `with_ids`)
            chosen, chosen_params = " AND s.service_id = ANY(%s)", [listed]
        else:
            chosen, chosen_params = f" AND s.service_id IN ({', '.join(['%s'] * len(listed))})", listed
    sql = f"""
        SELECT {columns}
        FROM {app}
        JOIN {link} s ON s.gitopsapp_id = {app}.id
        WHERE {candidates} AND {condition}{chosen}
    """  # noqa: S608 - table names from the models, conditions compiled by the ORM, values as parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, [*column_params, *candidates_params, *condition_params, *chosen_params])
        return cursor.fetchall()


def with_ids_from(rows: QuerySet[M], ids: QuerySet) -> QuerySet[M]:
    """`rows` (applications, workloads: the store's large tables) whose ids the one-column
    queryset `ids` yields. On PostgreSQL as `id = ANY(ARRAY(subquery))`: the subquery runs once
    and each row is looked up in the primary key, whatever the statistics say. A join or
    `id IN (subquery)` let the planner of a never-analyzed table take the apps for one row and
    loop over all 100,000 of them for the other side's rows (1 s for the matrix's offers, 49 s
    for the Delivery page's promotions); naming the ids in the query instead made thousands of
    literals to send and plan."""
    if connection.vendor != "postgresql":
        return rows.filter(pk__in=ids)
    from django.contrib.postgres.expressions import ArraySubquery

    listed = Func(F("pk"), ArraySubquery(ids), arg_joiner=" = ANY(", template="%(expressions)s)",
                  output_field=BooleanField())
    return rows.filter(listed)


def with_ids(rows: QuerySet[M], ids: Iterable[int], field: str = "pk") -> QuerySet[M]:
    """`rows` whose `field` (an integer column: the id, a foreign key) is one of `ids`, a list
    the caller holds. On PostgreSQL as `field = ANY(%s)` with the ids as one array parameter: an
    `IN` of 3,125 literals cost Django 30 ms to compile and PostgreSQL as much to parse (the
    Delivery page's promotions at 100,000 applications), and the plan is the same."""
    listed = list(dict.fromkeys(ids))
    if connection.vendor != "postgresql":
        return rows.filter(**{f"{field}__in": listed})
    from django.contrib.postgres.fields import ArrayField

    array = Value(listed, output_field=ArrayField(BigIntegerField()))
    matches = Func(F(field), array, arg_joiner=" = ANY(", template="%(expressions)s)", output_field=BooleanField())
    return rows.filter(matches)


def apps_loaded_with(rows: QuerySet[GitOpsApp], fields: Sequence[str]) -> list[GitOpsApp]:
    """`rows.only(*fields)`, as the instances it would load, built from `values_list` without
    Model.__init__: that walks all 62 of GitOpsApp's fields for each instance, deferred or not,
    and was a sixth of a service page whose service runs in 1,000 clusters (2,100 applications;
    bench/pages.py --polled). The instances behave as `only()`'s: the same converted values, and
    a field not loaded is read from the database when touched, one query each (so callers load
    what they read). (`GitOpsApp.__init__` also names an app's own cluster as `read_from` when
    none is given: a stored row always has one.)"""
    names = ["id", *(GitOpsApp._meta.get_field(name).attname for name in fields if name not in ("id", "pk"))]
    apps = []
    for values in rows.values_list(*names):
        app = GitOpsApp.__new__(GitOpsApp)
        app.__dict__.update(zip(names, values, strict=True))
        app._state = ModelState()
        app._state.adding, app._state.db = False, rows.db
        apps.append(app)
    return apps


def apps_with_ids_from(ids: QuerySet) -> QuerySet[GitOpsApp]:
    """The applications whose ids `ids` yields (`with_ids_from`)."""
    return with_ids_from(GitOpsApp.objects.all(), ids)


# Each next project is the smallest one past the last: one step down the project index per
# project, where a DISTINCT read every application (287 ms at 100,000 apps on a cold cache).
_PROJECT_NAMES_SQL = """
WITH RECURSIVE projects(name) AS (
    SELECT MIN(project) FROM {table} WHERE project > ''
    UNION ALL
    SELECT (SELECT MIN(project) FROM {table} WHERE project > projects.name)
    FROM projects WHERE projects.name IS NOT NULL
)
SELECT name FROM projects WHERE name IS NOT NULL
"""


def project_names() -> list[str]:
    """Every Argo CD project an application names, in order (none for Flux: no project)."""
    with connection.cursor() as cursor:
        cursor.execute(_PROJECT_NAMES_SQL.format(table=connection.ops.quote_name(GitOpsApp._meta.db_table)))
        return [name for (name,) in cursor.fetchall()]
