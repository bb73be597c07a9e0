"""Safe links for what pages show. Only http(s) URLs built from parsed parts; a string
from a cluster or a forge never becomes a link by itself.

The kernel holds what needs no forge: `safe_http_url` and Argo CD's UI. Links to a
commit, a compare or a repository page need to know the forge, so they live in
`forges.weblinks`; which commit a GitOps revision names is `gitops.revisions.commit_of`.

The portal's own URLs for every layer below the pages are spelled here too (`preview_url`,
`app_page_path`): nothing in delivery, releases, gitops or forges reverses a URL name itself
(tests/kernel/test_urls_below_pages.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote, urlencode, urlsplit

from django.conf import settings


def safe_http_url(url: str | None) -> str | None:
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.geturl()


def argocd_app_url(namespace: str, name: str, ui_url: str | None = None) -> str | None:
    """The application in its Argo CD instance's UI: /applications/<app namespace>/<name>.

    `ui_url` is the instance's (portal.kernel.catalog.models.ArgoCDInstance.ui_url); empty, the
    portal's default PORTAL_ARGOCD_URL. None when either name part is empty (a hand-written
    manifest without a namespace has no such page) or no base is an http(s) URL."""
    base = safe_http_url(ui_url or settings.PORTAL_ARGOCD_URL)
    if not base or not namespace or not name:
        return None
    return f"{base.rstrip('/')}/applications/{quote(namespace, safe='')}/{quote(name, safe='')}"


@dataclass(frozen=True)
class ArgoCDLinks:
    """What pages say of the Argo CD instance that manages an app: "via Argo CD <instance>",
    linking to the instance's own UI when one is set, and the app's deep link."""

    instance: str  # the instance's name ("" when the app has none recorded)
    instance_url: str | None  # the instance's UI (ArgoCDInstance.ui_url), only when set
    app_url: str | None  # the app in that UI, else in PORTAL_ARGOCD_URL (argocd_app_url)


class _Instance(Protocol):
    """What links need of an Argo CD instance (portal.kernel.catalog.models.ArgoCDInstance)."""

    name: str
    ui_url: str


def argocd_links(instance: _Instance | None, namespace: str, name: str) -> ArgoCDLinks:
    """The links of an Argo CD app managed by `instance` (None: none recorded; the default UI)."""
    ui_url = instance.ui_url if instance is not None else ""
    return ArgoCDLinks(instance=instance.name if instance is not None else "", instance_url=safe_http_url(ui_url),
                       app_url=argocd_app_url(namespace, name, ui_url))


# --- the portal's own pull request preview ---------------------------------------------

GROUPED = "grouped"  # one pull request per repository, branch and environment
EACH = "each"  # one pull request per item
CHART_SUBJECT = "chart="  # an item's subject that names a chart instead of a service


@dataclass(frozen=True)
class OfferItem:
    """One move an offer proposes: in application `target` (`12`, or `w31` for a workload no
    GitOps tool deploys), `subject` (a service, or `chart=<name>`) to `to`, from `start` when the
    offer knows it (the preview starts from Git's pin whatever it says)."""

    target: int | str
    subject: str
    to: str
    start: str = ""

    def spelled(self) -> str:
        return ":".join([str(self.target), self.subject, self.to] + ([self.start] if self.start else []))


def preview_url(kind: str, items: list[OfferItem], *, mode: str = GROUPED, back: str = "") -> str:
    """The preview of the pull request(s) an offer proposes: the one spelling of every offer's
    link, whichever page, API answer, assistant tool or alert shows it. A GET: following it
    writes nothing; `portal.web.views.pr` reads the same spelling back."""
    params: list[tuple[str, str]] = [("kind", kind), ("mode", mode)]
    params += [("item", item.spelled()) for item in items]
    if back:
        params.append(("next", back))
    return f"{_preview_path()}?{urlencode(params)}"


_PREVIEW_PATHS: dict[tuple[str, object], str] = {}


def _preview_path() -> str:
    """The preview page's path, reversed once per script prefix and URLconf: a page offering
    hundreds of previews spent a third of its offers' time reversing the same name."""
    from django.urls import get_script_prefix, get_urlconf, reverse

    key = (get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF)
    path = _PREVIEW_PATHS.get(key)
    if path is None:
        path = _PREVIEW_PATHS[key] = reverse("pr-preview")
    return path


# --- the portal's own page of an application ------------------------------------------


def app_page_path(services: Sequence[str], cluster: str, app: str) -> str:
    """Where the portal shows an application: its service's page when it deploys exactly one
    service, else the GitOps page filtered to its cluster and name. A path: the API makes it
    absolute from the request, alerts from the portal's base URL."""
    from django.urls import reverse

    if len(services) == 1:
        return reverse("service", args=[services[0]])
    return reverse("gitops") + "?" + urlencode({"cluster": cluster, "q": app})


# --- the portal's page of a pull request's rendered output ----------------------------


def rendered_output_path(pull_request_id: int) -> str:
    """Where the portal shows every object both sides of a pull request rendered (the comment on
    the forge links it, made absolute with the portal's base URL)."""
    from django.urls import reverse

    return reverse("pr-rendered", args=[pull_request_id])


def absolute(path: str) -> str:
    """A portal path as a link outside the portal (a forge comment, an alert)."""
    base = safe_http_url(settings.PORTAL_BASE_URL) or "http://127.0.0.1:8000"
    return f"{base.rstrip('/')}{path}"
