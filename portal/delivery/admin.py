"""Django admin: a service's version policy as its one JSON document (the same keys the service
page, the fleet file and the API use: `pr_reviewers`, `pr_labels`, `auto_pr`, ...), checked
and audited by portal.delivery.policy_editing like every other edit."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin

from portal.delivery import policy_editing
from portal.delivery.models import ServicePolicy
from portal.delivery.version_policy import PolicyError, VersionPolicy


class ServicePolicyForm(forms.ModelForm):
    policy = forms.JSONField(
        help_text="The policy as JSON: accept, range, allow_tags, ignore_tags, ignore_prereleases, auto_pr, "
        "pr_reviewers, pr_labels, put_off.",
        widget=forms.Textarea(attrs={"rows": 16, "cols": 80}),
    )

    class Meta:
        model = ServicePolicy
        fields = ("service",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        doc = self.instance.document() if self.instance.pk else VersionPolicy().to_dict()
        self.fields["policy"].initial = doc
        self.checked: VersionPolicy | None = None

    def clean_policy(self) -> Any:
        value = self.cleaned_data["policy"]
        try:
            self.checked = policy_editing.check(value)
        except PolicyError as exc:
            raise forms.ValidationError(str(exc)) from None
        return value


@admin.register(ServicePolicy)
class ServicePolicyAdmin(admin.ModelAdmin):
    form = ServicePolicyForm
    list_display = ("service", "accept", "range", "auto_pr_text", "updated_at")
    search_fields = ("service__name",)

    def get_readonly_fields(self, request: Any, obj: ServicePolicy | None = None) -> tuple[str, ...]:
        return ("service",) if obj is not None else ()

    @admin.display(description="auto_pr")
    def auto_pr_text(self, obj: ServicePolicy) -> str:
        return json.dumps(obj.auto_pr or {})

    def save_model(self, request: Any, obj: ServicePolicy, form: ServicePolicyForm, change: bool) -> None:
        assert form.checked is not None  # clean_policy ran
        row = policy_editing.save(obj.service, form.checked, request.user, via="admin")
        obj.pk = row.pk
        obj.set_policy(form.checked)
