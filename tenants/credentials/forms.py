"""The credentials page's forms. They only collect input: the rules are the services'. Secret
fields never render a value back (a refused form asks for it again)."""

from __future__ import annotations

from typing import Any

from django import forms

from .models import ModelCredential

TEXT = {"class": "form-control", "autocomplete": "off", "spellcheck": "false"}
SECRET = {"class": "form-control", "autocomplete": "new-password", "spellcheck": "false"}


def _secret(label: str, help_text: str = "") -> forms.CharField:
    return forms.CharField(label=label, required=False, strip=True, help_text=help_text,
                           widget=forms.PasswordInput(attrs=SECRET, render_value=False))


class CredentialValuesForm(forms.Form):
    """The secret values (which a kind needs is the service's to say) and S3's settings."""

    token = _secret("Token", "A read token from huggingface.co/settings/tokens, "
                    "of an account that accepted the gated model's terms.")
    access_key_id = _secret("Access key ID")
    secret_access_key = _secret("Secret access key")
    s3_endpoint = forms.CharField(
        label="S3 endpoint", required=False, max_length=270, widget=forms.TextInput(attrs={
            **TEXT, "placeholder": "e.g. https://minio.storage:9000"}),
        help_text="Empty for AWS S3. A URL's scheme sets HTTPS.",
    )
    s3_region = forms.CharField(label="S3 region", required=False, max_length=40,
                                widget=forms.TextInput(attrs={**TEXT, "placeholder":
                                                              "e.g. eu-central-1"}))
    s3_use_https = forms.BooleanField(
        label="Use HTTPS", required=False, initial=True,
        widget=forms.CheckboxInput(attrs={"class": "form-check-input", "role": "switch"}),
    )

    def values(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {name: data.get(name, "") for name in
                ("token", "access_key_id", "secret_access_key")}

    def s3_settings(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {"s3_endpoint": data.get("s3_endpoint", ""), "s3_region": data.get("s3_region", ""),
                "s3_use_https": bool(data.get("s3_use_https"))}

    def add_service_errors(self, exc) -> None:
        for name, messages in exc.message_dict.items():
            for message in messages:
                self.add_error(name if name in self.fields else None, message)


class CredentialAddForm(CredentialValuesForm):
    name = forms.CharField(
        max_length=ModelCredential._meta.get_field("name").max_length,
        widget=forms.TextInput(attrs={**TEXT, "placeholder": "e.g. hf-token"}),
        help_text="Lowercase letters, digits and '-'; you pick it by this name at launch.",
    )
    kind = forms.ChoiceField(choices=ModelCredential.Kind.choices,
                             widget=forms.RadioSelect(attrs={"class": "form-check-input"}),
                             initial=ModelCredential.Kind.HUGGING_FACE)
    field_order = ["name", "kind"]
