"""/notifications/: channels, rules and recent deliveries with their last error.

Everyone with a role reads the page; admins configure. Object ids travel in the query
string or the POST body, and a write URL opened with GET only leads back to the page.
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from portal.kernel.accounts.roles import Role, has_role, post_only, requires_role
from portal.kernel.audit.models import record
from portal.notifications.forms import ChannelForm, RuleForm
from portal.notifications.models import Channel, Delivery, Rule
from portal.notifications.samples import SAMPLE_NAMES, SAMPLES
from portal.notifications.senders import send_test

RECENT_DELIVERIES = 50


def _required(request: HttpRequest, model: type[Model]) -> Model:
    found = _object(request, model)
    if found is None:
        raise Http404(f"no such {model._meta.verbose_name}")
    return found


def _object(request: HttpRequest, model: type[Model]) -> Model | None:
    raw = request.POST.get("id") or request.GET.get("id") or ""
    if not raw:
        return None
    if not raw.isdigit():
        raise Http404("no such object")
    try:
        return model.objects.get(pk=int(raw))
    except model.DoesNotExist:
        raise Http404("no such object")


@require_safe
@requires_role(Role.VIEWER)
def index(request: HttpRequest) -> HttpResponse:
    deliveries = Delivery.objects.select_related("episode", "rule", "channel", "step")[:RECENT_DELIVERIES]
    context = {
        "channels": Channel.objects.all(),
        "rules": Rule.objects.select_related("channel", "environment", "cluster", "service"),
        "deliveries": deliveries,
        "can_configure": has_role(request.user, Role.ADMIN),
        "samples": SAMPLES,
    }
    return render(request, "notifications/index.html", context)


@requires_role(Role.ADMIN)
def channel_form(request: HttpRequest) -> HttpResponse:
    channel = _object(request, Channel)
    form = ChannelForm(request.POST or None, instance=channel)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        # The audit row names what changed, never the URL or the secret.
        changed = sorted(set(form.changed_data) | {f for f in ("url", "secret") if form.cleaned_data.get(f)})
        record(request.user, "notifications.channel_saved", saved.name, kind=saved.kind, fields=changed)
        messages.success(request, f"Channel “{saved.name}” saved.")
        return redirect("notifications")
    return render(request, "notifications/channel_form.html", {"form": form, "channel": channel})


@requires_role(Role.ADMIN)
@post_only("notifications")
def channel_test(request: HttpRequest) -> HttpResponse:
    channel = _required(request, Channel)
    sample = request.POST.get("sample") or ""
    if sample and sample not in SAMPLE_NAMES:
        raise Http404("no such sample alert")
    error = send_test(channel, sample=sample)
    record(request.user, "notifications.channel_tested", channel.name, ok=error is None, sample=sample)
    if error is None:
        what = dict(SAMPLES)[sample].lower() if sample else "notification"
        messages.success(request, f"Test {what} sent to “{channel.name}”.")
    else:
        messages.error(request, f"Test notification to “{channel.name}” failed: {error}")
    return redirect("notifications")


@requires_role(Role.ADMIN)
@post_only("notifications")
def channel_delete(request: HttpRequest) -> HttpResponse:
    channel = _required(request, Channel)
    record(request.user, "notifications.channel_deleted", channel.name, kind=channel.kind)
    channel.delete()
    messages.success(request, f"Channel “{channel.name}” and its rules deleted.")
    return redirect("notifications")


@requires_role(Role.ADMIN)
def rule_form(request: HttpRequest) -> HttpResponse:
    rule = _object(request, Rule)
    form = RuleForm(request.POST or None, instance=rule)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        record(request.user, "notifications.rule_saved", saved.name, kinds=saved.kinds, channel=saved.channel.name)
        messages.success(request, f"Rule “{saved.name}” saved.")
        return redirect("notifications")
    return render(request, "notifications/rule_form.html", {"form": form, "rule": rule})


@requires_role(Role.ADMIN)
@post_only("notifications")
def rule_delete(request: HttpRequest) -> HttpResponse:
    rule = _required(request, Rule)
    record(request.user, "notifications.rule_deleted", rule.name)
    rule.delete()
    messages.success(request, f"Rule “{rule.name}” deleted.")
    return redirect("notifications")
