"""The portal's MCP server (the official `mcp` SDK): seven read-only tools, served over
streamable HTTP at /mcp and over stdio (`manage.py mcp --stdio`).

How HTTP is served, and why: the portal runs under WSGI (runserver in portal.embedded,
gunicorn in docker-compose), and the SDK's transport is ASGI. Rather than a second server
process or an ASGI entry point that every way of running the portal would have to adopt,
/mcp is an ordinary Django view that hands each request to the SDK in its *stateless,
JSON-response* mode: a fresh transport per POST, no session kept between requests, no
server-sent-event stream held open, so one WSGI worker thread serves one MCP request and
returns, like any other request. asgiref's `async_to_sync` runs the SDK's coroutine for
the request; the tools go back to the request's own thread (`sync_to_async`,
thread-sensitive) to use the ORM. Nothing MCP needs is lost: the tools need no server-to-
client requests, and a client simply re-sends `initialize` when it reconnects.

Authentication is the REST API's: a personal API token (`Authorization: Bearer gpat_…`)
of a user with the viewer role, checked on the request and again by every read the tools
make. Nothing can be written: the tools only read what the API's GET routes serve
(portal.api.mcp.api_pages).
"""

from __future__ import annotations

import contextvars
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from portal.api.mcp import tools
from portal.api.mcp.api_pages import Caller, ReadError
from portal.delivery.exposures import FILTER_SEVERITIES
from portal.findings.discipline import RULES

# Who is calling, set per request (HTTP) or per process (stdio).
current_caller: contextvars.ContextVar[Caller] = contextvars.ContextVar("current_caller")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)

INSTRUCTIONS = (
    "The GitOps portal: every Argo CD Application and Flux Kustomization/HelmRelease on every cluster, the "
    "versions they run, sync windows, and the pull requests that change them. Read-only. Start with "
    "`why_not_deployed` for 'why is X not running in Y', `service` for 'what runs where / what can be upgraded', "
    "`gitops` for lists and filters over apps, `pull_requests` for PR state, checks and lead times, "
    "`preview_pull_request` for the diff a change would make and whether you may open it, `findings` for "
    "GitOps discipline findings, `security` for running versions with known vulnerabilities. Answers are "
    "paged: pass `cursor` back for more. Unknown arguments are refused, naming the ones a tool takes."
)

Sync = Literal["Synced", "OutOfSync", "Unknown"]
Health = Literal["Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"]
Status = Literal["degraded", "missing", "outofsync", "progressing", "healthy", "suspended", "manual", "blocked"]
Name = Annotated[str, Field(pattern=r"^[-a-zA-Z0-9_]+$", max_length=63)]
Cursor = Annotated[str | None, Field(description="the `next_cursor` of the previous answer; omit for the first page")]
PageSize = Annotated[int, Field(ge=1, le=tools.MAX_PAGE, description="items per page")]


def _caller() -> Caller:
    try:
        return current_caller.get()
    except LookupError:
        raise ToolError("not authenticated") from None


async def _run(fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    caller = _caller()
    try:
        return await sync_to_async(fn, thread_sensitive=True)(caller, *args, **kwargs)
    except ReadError as exc:
        raise ToolError(f"{exc} (HTTP {exc.status})") from exc
    except ValueError as exc:
        raise ToolError(str(exc)) from exc


class StrictServer(MCPServer):
    """The SDK's server, refusing arguments a tool does not declare. The SDK's argument models
    drop unknown keys silently, so `gitops({"needs_attention": true})` would answer the unfiltered
    list, which reads like a real answer; refused, the assistant learns the names it may use."""

    def add_tool(self, *args: Any, **kwargs: Any) -> None:
        super().add_tool(*args, **kwargs)
        for tool in self._tool_manager.list_tools():
            tool.parameters["additionalProperties"] = False  # the published schema says it too

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            allowed = sorted(tool.parameters.get("properties", {}))
            unknown = sorted(set(arguments) - set(allowed))
            if unknown:
                raise ToolError(f"{name} takes no argument {', '.join(repr(u[:40]) for u in unknown[:10])}; "
                                f"its arguments are: {', '.join(allowed) or 'none'}")
        return await super().call_tool(name, arguments, context)


def build_server() -> MCPServer:
    server = StrictServer(name="gitops-portal", title="GitOps portal", instructions=INSTRUCTIONS, version="1")

    @server.tool(annotations=READ_ONLY, description=(
        "List GitOps apps (Argo CD Applications, Flux Kustomizations and HelmReleases) across every cluster, with "
        "the /api/v1/gitops filters (AND). Each app: sync and health with since when, whether a sync window or a "
        "suspension blocks it and until when, manual sync, suspended, the versions it runs vs what Git pins, and "
        "after_change (the version change that preceded a degradation). Summary counts first; paged."))
    async def gitops(
        cluster: Annotated[Name | None, Field(description="cluster name")] = None,
        environment: Annotated[Name | None, Field(description="environment name, e.g. prod")] = None,
        service: Annotated[str | None, Field(description="apps deploying this catalog service", max_length=100,
                                             pattern=r"^[-a-zA-Z0-9_]+$")] = None,
        tool: Annotated[Literal["argo", "flux"] | None, Field(description="Argo CD or Flux")] = None,
        project: Annotated[str | None, Field(description="Argo CD AppProject", max_length=253)] = None,
        sync: Annotated[Sync | None, Field(description="sync status")] = None,
        health: Annotated[Health | None, Field(description="health status")] = None,
        status: Annotated[Status | None, Field(description="the /gitops page's status menu; blocked = held by a "
                                                            "sync window or suspension now")] = None,
        q: Annotated[str | None, Field(description="text in name, namespace, repository, path or chart",
                                       max_length=100)] = None,
        attention: Annotated[bool | None, Field(description="true: only apps needing attention")] = None,
        cursor: Cursor = None,
        page_size: PageSize = tools.DEFAULT_PAGE,
    ) -> dict[str, Any]:
        filters = {"cluster": cluster, "environment": environment, "service": service, "tool": tool,
                   "project": project, "sync": sync, "health": health, "status": status, "q": q,
                   "attention": attention}
        return await _run(tools.gitops, {k: v for k, v in filters.items() if v is not None}, cursor, page_size)

    @server.tool(annotations=READ_ONLY, description=(
        "Pull requests the portal opened (upgrades, promotions, rollbacks) or linked, newest first: state, the "
        "forge's checks, from -> to versions, whether the new version runs (and in production), merged-but-not-"
        "deployed, lead times (proposal -> running, merge -> running), its reach: every application whose "
        "build includes an edited file, by environment and cluster, with the version it runs after the merge and "
        "a warning where that goes beyond the change's environment or services; and for an open one its rendered "
        "diff (per application, the objects and fields its manifests change at the branch's head). Paged."))
    async def pull_requests(
        state: Annotated[Literal["open", "merged", "closed"] | None, Field(description="PR state")] = None,
        kind: Annotated[Literal["upgrade", "promotion", "rollback"] | None, Field(description="PR kind")] = None,
        environment: Annotated[Name | None, Field(description="target environment")] = None,
        cursor: Cursor = None,
        page_size: PageSize = tools.DEFAULT_PAGE,
    ) -> dict[str, Any]:
        filters = {"state": state, "kind": kind, "environment": environment}
        return await _run(tools.pull_requests, {k: v for k, v in filters.items() if v is not None}, cursor,
                          page_size)

    @server.tool(annotations=READ_ONLY, description=(
        "Explain why a service is not (yet) deployed in an environment, or why one app is held: for each app, the "
        "reasons in order — a sync window (until when), manual sync, a Flux suspension, not synced yet, a merged "
        "pull request (or Git pin) not running yet, degraded; for a service, the next time it can deploy to each "
        "environment and what holds it until then (sync windows, change freezes, suspensions). Give `service` "
        "(+ `environment`) or `app`."))
    async def why_not_deployed(
        service: Annotated[str | None, Field(description="catalog service name, e.g. payments", max_length=100,
                                             pattern=r"^[-a-zA-Z0-9_]+$")] = None,
        environment: Annotated[Name | None, Field(description="environment name, e.g. prod")] = None,
        app: Annotated[str | None, Field(description="one app as the gitops tool names it: cluster/namespace/name, "
                                                     "e.g. prod-eu-1/argocd/payments-prod, with ?read_from=/?kind= "
                                                     "where apps share the path", max_length=600)] = None,
    ) -> dict[str, Any]:
        return await _run(tools.why_not_deployed, service, environment, app)

    @server.tool(annotations=READ_ONLY, description=(
        "One catalog service: the versions it runs per environment and cluster (and under which apps), the "
        "newest release its policy accepts where it runs older, the latest release, and the open upgrade and "
        "promotion offers with the portal's preview link of each pull request, and its known vulnerabilities "
        "per running version (exploited in the wild counted) with what the newest acceptable release fixes."))
    async def service(
        name: Annotated[str, Field(description="catalog service name", max_length=100, pattern=r"^[-a-zA-Z0-9_]+$")],
        offers: Annotated[int, Field(ge=1, le=50, description="offers to list")] = 10,
    ) -> dict[str, Any]:
        return await _run(tools.service, name, offers)

    _add_preview_tool(server)
    _add_report_tools(server)
    return server


def _add_report_tools(server: MCPServer) -> None:
    """The /findings and /security pages' facts, read through the same API views."""

    @server.tool(annotations=READ_ONLY, description=(
        "Open GitOps discipline findings (/api/v1/findings; muted ones left out): per app, the rule and its "
        "severity, what is wrong, why the rule matters, what to change and a YAML example of the change; counts "
        "per rule over everything matching. Filters (AND): rule, environment, cluster. Paged."))
    async def findings(
        rule: Annotated[Literal[tuple(sorted(RULES))] | None,  # type: ignore[valid-type]
                        Field(description="one rule's findings")] = None,
        environment: Annotated[Name | None, Field(description="environment name, e.g. prod")] = None,
        cluster: Annotated[Name | None, Field(description="cluster name")] = None,
        cursor: Cursor = None,
        page_size: PageSize = tools.DEFAULT_PAGE,
    ) -> dict[str, Any]:
        filters = {"rule": rule, "environment": environment, "cluster": cluster}
        return await _run(tools.findings, {k: v for k, v in filters.items() if v is not None}, cursor, page_size)

    @server.tool(annotations=READ_ONLY, description=(
        "Running versions with known vulnerabilities (/api/v1/security, the /security page's facts): per service, "
        "environment and version, how many (exploited in the wild counted), the worst ids, the newest acceptable "
        "release and how many it fixes; the versions not checked and why; when OSV and KEV were last read. "
        "Filters (AND): severity (at least), exploited, team, environment. Paged."))
    async def security(
        severity: Annotated[Literal[FILTER_SEVERITIES] | None,  # type: ignore[valid-type]
                            Field(description="at least this severity")] = None,
        exploited: Annotated[bool | None, Field(description="true: only those exploited in the wild (CISA KEV)")
                             ] = None,
        team: Annotated[str | None, Field(description="the owning team", max_length=100)] = None,
        environment: Annotated[Name | None, Field(description="environment name, e.g. prod")] = None,
        cursor: Cursor = None,
        page_size: PageSize = tools.DEFAULT_PAGE,
    ) -> dict[str, Any]:
        filters = {"severity": severity, "exploited": exploited, "team": team, "environment": environment}
        return await _run(tools.security, {k: v for k, v in filters.items() if v is not None}, cursor, page_size)


def _add_preview_tool(server: MCPServer) -> None:
    """The one tool about acting, kept apart: it previews and judges, never opens."""

    @server.tool(annotations=READ_ONLY, description=(
        "Preview a pull request without opening it: the files and the diff it would change, branch and title, "
        "warnings (freezes, sync windows, tag-following apps), its `reach` (every application whose build "
        "includes an edited file, by environment and cluster, with warnings beyond the target), and whether you "
        "may open it (`may_open`; "
        "`refusal` says why not, naming the team that owns the service). Items as the preview page and the "
        "`service` tool's offers name them: app:service:version, e.g. 12:checkout:1.7.0."))
    async def preview_pull_request(
        items: Annotated[list[Annotated[str, Field(pattern=r"^w?[0-9]+:[^:\s]+:[^:\s]+(:[^:\s]+)?$",
                                                   max_length=400)]],
                         Field(min_length=1, max_length=20, description="app:service:version[:from] items")],
        kind: Annotated[Literal["upgrade", "promotion", "rollback"], Field(description="PR kind")] = "upgrade",
        mode: Annotated[Literal["grouped", "each"], Field(
            description="grouped: one PR per repository, branch and environment; each: one per item")] = "grouped",
        confirm: Annotated[bool, Field(description="propose on the default branch for an app that follows a "
                                                   "tag")] = False,
    ) -> dict[str, Any]:
        return await _run(tools.preview_pull_request, kind, items, mode, confirm)


SERVER = build_server()
