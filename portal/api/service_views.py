"""GET /api/v1/services: catalog services with the versions they run per environment and
cluster, the newest release their policy accepts where they run older, and the open offers
(upgrades and promotions) with the preview page of each.

"Newest acceptable" and the offers are the Updates and Delivery pages' answers
(portal.delivery.upgrades.BehindLines, portal.delivery.promotions.load): one definition. A
page costs a fixed number of queries: the running versions, releases and lines behind of
all its services are read at once.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

import django_filters
from django.core.validators import RegexValidator
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from gitops.appfilter import SLUG
from gitops.models import RunningVersion
from portal.api.base_views import AtRequestTimeFilterBackend, PortalAPIView, errors, filter_parameters
from portal.api.pagination import KeysetPagination, Ordering
from portal.api.serializers.api_fields import OffsetDateTimeField, VersionPolicyField
from portal.delivery import promotions
from portal.delivery.deploy_holds import DeployHolds, NextDeploy
from portal.delivery.planner import UPGRADE
from portal.delivery.upgrades import BehindLines
from portal.kernel.catalog.models import Service
from portal.kernel.links import OfferItem, preview_url
from portal.releases.models import Release
from portal.releases.versions import sort_tags

OFFERS_SHOWN = 50  # per service; `offers_total` says how many there are


class ServiceFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(max_length=100, validators=[RegexValidator(SLUG)], strip=False,
                                     help_text="service name")
    team = django_filters.CharFilter(max_length=100, strip=False, help_text="owning team")
    environment = django_filters.CharFilter(
        field_name="running_versions__cluster__environment__name", max_length=63, validators=[RegexValidator(SLUG)],
        distinct=True, strip=False, help_text="services running in this environment")

    class Meta:
        model = Service
        fields: list[str] = []

    def __init__(self, data: Any = None, queryset: Any = None, *, at: datetime | None = None, **kwargs: Any) -> None:
        super().__init__(data, queryset, **kwargs)
        self.at = at


class ClusterVersionsSerializer(serializers.Serializer):
    cluster = serializers.CharField()
    versions = serializers.ListField(child=serializers.CharField(), help_text="versions running there, oldest first")
    apps = serializers.ListField(child=serializers.CharField(), help_text="GitOps apps running it (namespace/name); "
                                 "empty when it runs outside GitOps")


class NextDeploySerializer(serializers.Serializer):
    """When the service can next deploy to the environment (portal.delivery.deploy_holds: the
    badges' sync-window verdicts, change freezes and Flux suspensions), and what holds it."""

    at = OffsetDateTimeField(allow_null=True, help_text="the first instant every GitOps app deploying the service "
                             "there may sync with no change freeze in force; null when it can deploy now (`now`) "
                             "or when a hold has no end in sight")
    now = serializers.BooleanField(help_text="nothing holds it at the time of the request")
    reason = serializers.CharField(help_text="what holds it until then, in words (\"nothing holds it\" if nothing)")
    holds = serializers.ListField(child=serializers.CharField(), help_text="each hold it waits for, in order")
    caveats = serializers.ListField(child=serializers.CharField(),
                                    help_text="apps without automated sync: they deploy when someone syncs them")


def next_deploy_data(answer: NextDeploy | None) -> dict[str, Any] | None:
    if answer is None:
        return None
    # "Now" is the request's own instant: said by `now`, not as a time that differs at each read.
    return NextDeploySerializer({"at": None if answer.now else answer.at, "now": answer.now, "reason": answer.reason,
                                 "holds": answer.holds, "caveats": answer.caveats}).data


class EnvironmentVersionsSerializer(serializers.Serializer):
    environment = serializers.CharField()
    versions = serializers.ListField(child=serializers.CharField(), help_text="versions running in the "
                                     "environment, oldest first")
    clusters = ClusterVersionsSerializer(many=True)
    newest_acceptable = serializers.CharField(
        allow_null=True, help_text="the newest release the service's policy accepts, where the environment runs "
        "older; null when it runs it already (or none is known)")
    next_deploy = NextDeploySerializer(allow_null=True, help_text="null when no GitOps app deploys it there")


class OfferSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["upgrade", "promotion"])
    environment = serializers.CharField()
    cluster = serializers.CharField()
    app = serializers.CharField(help_text="the application the pull request would change (namespace/name, or name)")
    from_version = serializers.CharField()
    to_version = serializers.CharField()
    jump = serializers.CharField(allow_blank=True, help_text="major, minor or patch (upgrades)")
    pinned_at_target = serializers.BooleanField(help_text="Git already pins the target: merged, waiting to deploy")
    open_pull_request = serializers.URLField(allow_null=True, help_text="an open pull request already proposing it")
    notes_url = serializers.URLField(allow_null=True, help_text="the target's release notes")
    preview_url = serializers.URLField(help_text="the portal's preview of the pull request (GET writes nothing)")


class ServiceSerializer(serializers.Serializer):
    """A catalog service and where it runs."""

    name = serializers.CharField()
    team = serializers.CharField(allow_blank=True)
    image_repository = serializers.CharField()
    source_repository = serializers.CharField(allow_blank=True)
    latest_release = serializers.SerializerMethodField(help_text="the newest tag the portal has seen released")
    environments = serializers.SerializerMethodField(help_text="in environment order")
    offers = serializers.SerializerMethodField(help_text=f"open upgrade and promotion offers (the first "
                                               f"{OFFERS_SHOWN})")
    offers_total = serializers.SerializerMethodField()
    policy = VersionPolicyField(help_text="the service's version policy, as the service page and fleet file hold it")
    portal_url = serializers.SerializerMethodField()

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_latest_release(self, service: Service) -> str | None:
        tags = self.context["tags"].get(service.pk) or []
        return sort_tags(tags)[-1] if tags else None

    @extend_schema_field(EnvironmentVersionsSerializer(many=True))
    def get_environments(self, service: Service) -> list[dict[str, Any]]:
        return self.context["environments"].get(service.pk, [])

    @extend_schema_field(OfferSerializer(many=True))
    def get_offers(self, service: Service) -> list[dict[str, Any]]:
        return self.context["offers"].get(service.pk, [])[:OFFERS_SHOWN]

    def get_offers_total(self, service: Service) -> int:
        return len(self.context["offers"].get(service.pk, []))

    @extend_schema_field(serializers.URLField())
    def get_portal_url(self, service: Service) -> str:
        return self.context["request"].build_absolute_uri(reverse("service", kwargs={"name": service.name}))


def services_context(page: list[Service], absolute: Any) -> dict[str, Any]:
    """What the serializer shows of a page of services, in a fixed number of queries.
    `absolute` turns a path into an absolute URL."""
    ids = [service.pk for service in page]
    tags: dict[int, list[str]] = defaultdict(list)
    for service_id, tag in Release.objects.filter(service_id__in=ids).values_list("service_id", "tag"):
        tags[service_id].append(tag)
    rows = (RunningVersion.objects.filter(service_id__in=ids)
            .values_list("service_id", "cluster__environment__name", "cluster__environment__order", "cluster__name",
                         "version", "app__namespace", "app__name")
            .order_by("cluster__environment__order", "cluster__name"))
    by_env: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for service_id, env, order, cluster, version, app_ns, app_name in rows:
        env_name = env or "(no environment)"
        entry = by_env[service_id].setdefault(env_name, {"environment": env_name, "order": order or 0,
                                                         "clusters": {}})
        place = entry["clusters"].setdefault(cluster, {"cluster": cluster, "versions": set(), "apps": set()})
        place["versions"].add(version)
        if app_name:
            place["apps"].add(f"{app_ns}/{app_name}")
    offers: dict[int, list[dict[str, Any]]] = defaultdict(list)
    newest: dict[tuple[int, str], str] = {}
    behind_lines = BehindLines(today=timezone.now().date())
    mine = [line for line in behind_lines.lines if line.service.pk in ids]
    for behind in behind_lines.load(lines=mine) if mine else []:
        env = behind.environment
        key = (behind.service.pk, env)
        newest[key] = sort_tags([v for v in (newest.get(key), behind.target) if v])[-1]
        place = behind.app or behind.workload  # an application, or a workload outside GitOps
        assert place is not None
        offers[behind.service.pk].append({
            "kind": "upgrade", "environment": env, "cluster": behind.cluster.name,
            "app": f"{place.namespace}/{place.name}",
            "from_version": behind.running, "to_version": behind.target, "jump": behind.jump,
            "pinned_at_target": behind.pinned_at_target,
            "open_pull_request": behind.open_pr.url if behind.open_pr is not None and behind.open_pr.url else None,
            "notes_url": behind.notes_url,
            "preview_url": absolute(preview_url(UPGRADE, [OfferItem(behind.ref, behind.service.name, behind.target)])),
        })
    names = {service.name: service.pk for service in page}
    waiting, _ = promotions.load()
    for promotion in waiting:
        if promotion.service not in names:
            continue
        for target in promotion.targets:
            if target.app_id is None:
                continue
            url = promotions.preview_url(target.app_id, [(promotion.service, target.start, promotion.version)])
            offers[names[promotion.service]].append({
                "kind": "promotion", "environment": promotion.production, "cluster": target.cluster,
                "app": target.app, "from_version": target.start, "to_version": promotion.version, "jump": "",
                "pinned_at_target": False, "open_pull_request": None, "notes_url": None,
                "preview_url": absolute(url),
            })
    now = timezone.now()
    holds = DeployHolds.load(now, services=list(names))
    environments: dict[int, list[dict[str, Any]]] = {}
    service_names = {pk: name for name, pk in names.items()}
    for service_id, envs in by_env.items():
        environments[service_id] = [
            {"environment": name, "versions": sort_tags({v for c in e["clusters"].values() for v in c["versions"]}),
             "clusters": [{"cluster": c["cluster"], "versions": sort_tags(c["versions"]), "apps": sorted(c["apps"])}
                          for c in e["clusters"].values()],
             "newest_acceptable": newest.get((service_id, name)),
             "next_deploy": next_deploy_data(holds.next_deploy(service_names[service_id], name, now))}
            for name, e in sorted(envs.items(), key=lambda item: (item[1]["order"], item[0]))
        ]
    return {"tags": tags, "environments": environments, "offers": offers}


def services() -> QuerySet[Service]:
    return Service.objects.select_related("version_policy")  # the policy field in the same query


def service_items(page: list[Service], context: dict[str, Any]) -> list[dict[str, Any]]:
    """A page of services as the list serves them; `context` carries the `request` that makes
    links absolute."""
    context = {**context, **services_context(page, context["request"].build_absolute_uri)}
    return ServiceSerializer(page, many=True, context=context).data


ORDERING = Ordering("name", (("name", "str"), ("id", "int")))


class ServiceListView(PortalAPIView):
    queryset = Service.objects.none()  # tells drf-spectacular the model; rows come from the query function
    serializer_class = ServiceSerializer
    filter_backends = [AtRequestTimeFilterBackend]
    filterset_class = ServiceFilter
    pagination_class = KeysetPagination

    def get_ordering(self) -> Ordering:
        return ORDERING

    @extend_schema(
        operation_id="services_list",
        summary="Services: versions per environment and cluster, newest acceptable release, open offers",
        description="Catalog services by name, each with the versions it runs per environment and cluster, the "
        "newest release its policy accepts where it runs older (the Updates page's answer), and the open "
        "upgrade and promotion offers with the preview page of each. Cursor-paginated.",
        parameters=filter_parameters(ServiceFilter),
        responses={200: ServiceSerializer(many=True), **errors(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        self.query(request)
        self.now = timezone.now()
        page = self.paginate_queryset(self.filter_queryset(services()))
        return self.get_paginated_response(service_items(page, self.get_serializer_context()))
