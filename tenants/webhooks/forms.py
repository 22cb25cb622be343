"""The webhook pages' forms. They only collect input: the rules are the services'."""

from __future__ import annotations

from django import forms

from .models import SUBSCRIBABLE, DeliveryStatus, EventType, Webhook

TEXT = {"class": "form-control", "autocomplete": "off", "spellcheck": "false"}


class WebhookForm(forms.Form):
    name = forms.CharField(max_length=100, widget=forms.TextInput(attrs={
        **TEXT, "placeholder": "e.g. CI notifier"}), help_text="What it is for.")
    url = forms.CharField(label="URL", max_length=500, widget=forms.TextInput(attrs={
        **TEXT, "placeholder": "https://hooks.example.com/portal", "inputmode": "url"}),
        help_text="An HTTPS address on the internet; it receives a POST per event.")
    event_types = forms.MultipleChoiceField(
        label="Events", choices=SUBSCRIBABLE, initial=[value for value, _ in SUBSCRIBABLE],
        widget=forms.CheckboxSelectMultiple(attrs={"class": "form-check-input"}))
    format = forms.ChoiceField(choices=Webhook.Format.choices, initial=Webhook.Format.STANDARD,
                               widget=forms.RadioSelect(attrs={"class": "form-check-input"}),
                               help_text="Slack-compatible: a sentence and a link, e.g. for a "
                                         "Slack or Mattermost incoming webhook.")

    @classmethod
    def of(cls, hook: Webhook, data=None) -> WebhookForm:
        return cls(data, initial={"name": hook.name, "url": hook.url,
                                  "event_types": hook.event_types, "format": hook.format})

    def add_service_errors(self, exc) -> None:
        for name, messages in exc.message_dict.items():
            for message in messages:
                self.add_error(name if name in self.fields else None, message)


class DeliveryFilterForm(forms.Form):
    """The delivery log's filters; an unknown value is dropped (all shown)."""

    status = forms.ChoiceField(required=False, choices=[("", "Every state"),
                                                        *DeliveryStatus.choices],
                               widget=forms.Select(attrs={"class": "form-select form-select-sm"}))
    event_type = forms.ChoiceField(required=False, label="Event",
                                   choices=[("", "Every event"), *EventType.choices],
                                   widget=forms.Select(attrs={"class":
                                                              "form-select form-select-sm"}))

    def filters(self) -> dict[str, str]:
        if not self.is_valid():
            return {"status": "", "event_type": ""}
        return {"status": self.cleaned_data["status"],
                "event_type": self.cleaned_data["event_type"]}
