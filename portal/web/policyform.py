"""The version policy form of the service page: the policy's JSON document as fields a person
fills in (one regex per line, reviewers and labels separated by commas, one automatic-PR
level per environment), turned back into that document and checked by
portal.delivery.policy_editing — the one check the admin and the fleet file go through too.

Put-off versions are not edited here (the Updates page puts versions off); the form keeps
the stored ones as they are.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms

from portal.delivery import policy_editing
from portal.delivery.version_policy import ACCEPT_CHOICES, AUTO_PR_CHOICES, PolicyError, VersionPolicy
from portal.kernel.catalog.models import Environment

ACCEPT_LABELS = {"any": "any newer version", "major": "up to a major jump", "minor": "minor and patch (same major)",
                 "patch": "patch only (same minor)"}
AUTO_PR_LABELS = {"none": "never", "major": "any jump", "minor": "minor and patch", "patch": "patch only"}
# A field's name, as the policy's own messages start with it ("pr_reviewers: ...").
_FIELD_OF_MESSAGE = re.compile(r"^(accept|range|allow_tags|ignore_tags|pr_reviewers|pr_labels)\b")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _items(text: str) -> list[str]:
    return [item.strip() for item in re.split(r"[,\n]", text) if item.strip()]


class PolicyForm(forms.Form):
    accept = forms.ChoiceField(label="Accepted jump", choices=[(c, ACCEPT_LABELS[c]) for c in ACCEPT_CHOICES])
    range = forms.CharField(label="Semver range", required=False, max_length=200,
                            help_text='node-semver, e.g. ">=1.4 <2" or "^1.2"; empty: any')
    allow_tags = forms.CharField(label="Allow tags (regex, one per line)", required=False, max_length=2000,
                                 widget=forms.Textarea(attrs={"rows": 2}), help_text="a tag must contain one")
    ignore_tags = forms.CharField(label="Ignore tags (regex, one per line)", required=False, max_length=2000,
                                  widget=forms.Textarea(attrs={"rows": 2}), help_text="a tag containing one is skipped")
    include_prereleases = forms.BooleanField(label="Offer pre-releases (1.8.0-rc.1)", required=False)
    pr_reviewers = forms.CharField(label="Reviewers", required=False, max_length=2000,
                                   help_text="logins and teams as @org/team, separated by commas")
    pr_labels = forms.CharField(label="Labels", required=False, max_length=2000, help_text="separated by commas")

    def __init__(self, *args: Any, stored: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stored = stored or VersionPolicy().to_dict()
        self.environments = list(Environment.objects.order_by("order", "name").values_list("name", flat=True))
        for env in self.environments:
            self.fields[self.auto_field(env)] = forms.ChoiceField(
                label=f"Automatic PRs in {env}", choices=[(c, AUTO_PR_LABELS[c]) for c in AUTO_PR_CHOICES],
                required=False)
        if not self.is_bound:
            self.initial = self.initial_from(self.stored)
        self.policy: VersionPolicy | None = None
        self.problem = ""

    @staticmethod
    def auto_field(env: str) -> str:
        return f"auto_pr__{env}"

    def auto_pr_fields(self) -> list[forms.BoundField]:
        return [self[self.auto_field(env)] for env in self.environments]

    def initial_from(self, doc: dict[str, Any]) -> dict[str, Any]:
        initial = {
            "accept": doc.get("accept") or "any",
            "range": doc.get("range") or "",
            "allow_tags": "\n".join(doc.get("allow_tags") or []),
            "ignore_tags": "\n".join(doc.get("ignore_tags") or []),
            "include_prereleases": not doc.get("ignore_prereleases", True),
            "pr_reviewers": ", ".join(doc.get("pr_reviewers") or []),
            "pr_labels": ", ".join(doc.get("pr_labels") or []),
        }
        for env in self.environments:
            initial[self.auto_field(env)] = (doc.get("auto_pr") or {}).get(env, "none")
        return initial

    def document(self) -> dict[str, Any]:
        data = self.cleaned_data
        auto_pr = {env: data.get(self.auto_field(env)) or "none" for env in self.environments}
        # Environments the catalog no longer has are kept as stored (the page cannot show them).
        kept = {env: level for env, level in (self.stored.get("auto_pr") or {}).items() if env not in auto_pr}
        return {
            "accept": data["accept"],
            "range": data["range"].strip(),
            "allow_tags": _lines(data["allow_tags"]),
            "ignore_tags": _lines(data["ignore_tags"]),
            "ignore_prereleases": not data["include_prereleases"],
            "auto_pr": {env: level for env, level in {**kept, **auto_pr}.items() if level != "none"},
            "pr_reviewers": _items(data["pr_reviewers"]),
            "pr_labels": _items(data["pr_labels"]),
            "put_off": self.stored.get("put_off") or [],
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.policy = policy_editing.check(self.document())
        except PolicyError as exc:
            self.problem = str(exc)
            match = _FIELD_OF_MESSAGE.match(self.problem)
            self.add_error(match[1] if match else None, self.problem)
        return cleaned
