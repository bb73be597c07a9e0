"""Forms for channels and rules. A channel's URL and signing secret are write-only fields:
never rendered back (not even after a validation error); left empty, they keep their value.
A Slack app channel stores no secret at all: only the name of the variable with its bot token."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from portal.kernel.links import safe_http_url
from portal.notifications.events import RULE_KINDS
from portal.notifications.models import Channel, Rule

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
SLACK_CONVERSATION = re.compile(r"^[CGD][A-Z0-9]{2,30}$")


class ChannelForm(forms.ModelForm):
    url = forms.CharField(
        required=False,
        max_length=2000,
        label="Webhook URL",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Slack, Teams, Discord, webhook, or the ntfy topic URL (https://ntfy.example.com/deploys). "
        "Stored as a secret; leave empty to keep the saved one.",
    )
    secret = forms.CharField(
        required=False,
        max_length=200,
        label="Signing secret",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Webhook: the HMAC-SHA256 key the receiver verifies X-Portal-Signature with. "
        "ntfy: an access token (tk_…) when the topic needs one.",
    )

    class Meta:
        model = Channel
        fields = ["name", "kind", "recipients", "token_env", "chat_channel"]
        widgets = {"recipients": forms.TextInput(attrs={"size": 60})}
        labels = {"token_env": "Bot token variable", "chat_channel": "Slack conversation id"}
        help_texts = {
            "token_env": "Slack app: the NAME of the environment variable holding the bot token (xoxb-…), "
            "e.g. SLACK_BOT_TOKEN; the token itself is never stored.",
            "chat_channel": "Slack app: the conversation the bot posts in (C0123ABCD); invite the bot there.",
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind = data.get("kind")
        url = (data.get("url") or "").strip()
        if kind == Channel.Kind.EMAIL:
            addresses = [a.strip() for a in (data.get("recipients") or "").replace(";", ",").split(",") if a.strip()]
            if not addresses:
                self.add_error("recipients", "Give at least one e-mail address.")
            for address in addresses:
                try:
                    validate_email(address)
                except ValidationError:
                    self.add_error("recipients", f"“{address}” is not an e-mail address.")
        elif kind == Channel.Kind.SLACK_APP:
            if not ENV_NAME.match(data.get("token_env") or ""):
                self.add_error("token_env", "Give the name of an environment variable, e.g. SLACK_BOT_TOKEN.")
            if not SLACK_CONVERSATION.match(data.get("chat_channel") or ""):
                self.add_error("chat_channel", "Give a Slack conversation id, e.g. C0123ABCD.")
        elif kind:
            if url and not safe_http_url(url):
                self.add_error("url", "Give an http(s) URL.")
            elif not url and not self.instance.url:
                self.add_error("url", "A webhook URL is needed.")
        if kind == Channel.Kind.WEBHOOK and not (data.get("secret") or self.instance.secret):
            self.add_error("secret", "A signing secret is needed: receivers verify requests with it.")
        data["url"] = url
        return data

    def save(self, commit: bool = True) -> Channel:
        channel = super().save(commit=False)
        if self.cleaned_data.get("url"):
            channel.url = self.cleaned_data["url"]
        if self.cleaned_data.get("secret"):
            channel.secret = self.cleaned_data["secret"]
        if commit:
            channel.save()
        return channel


class RuleForm(forms.ModelForm):
    kinds = forms.MultipleChoiceField(choices=RULE_KINDS, widget=forms.CheckboxSelectMultiple, label="Events")

    class Meta:
        model = Rule
        fields = ["name", "kinds", "environment", "cluster", "service", "channel", "enabled"]
        labels = {"environment": "Only environment", "cluster": "Only cluster", "service": "Only service"}
