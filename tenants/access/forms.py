"""Forms of the members page."""

from django import forms

from core.api.scopes import Scope

from .models import Membership, ServiceAccount


class MemberAddForm(forms.Form):
    user = forms.CharField(
        label="Username or e-mail",
        max_length=254,
        widget=forms.TextInput(attrs={"class": "form-control", "placeholder": "e.g. hana"}),
    )
    role = forms.ChoiceField(
        choices=Membership.Role.choices,
        initial=Membership.Role.MEMBER,
        widget=forms.Select(attrs={"class": "form-select"}),
    )


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(
        choices=Membership.Role.choices, widget=forms.Select(attrs={"class": "form-select"})
    )


class ServiceAccountForm(forms.Form):
    """A new service account (the service checks the name: a DNS-1123 label, free in the
    tenant). The Keycloak client field is a platform admin's only (`link_keycloak`)."""

    name = forms.CharField(max_length=63, help_text="Lowercase letters, digits and '-', e.g. "
                           "ci-deploy.")
    role = forms.ChoiceField(choices=ServiceAccount.ROLES, initial=Membership.Role.MEMBER)
    keycloak_client_id = forms.CharField(
        label="Keycloak client (optional)", max_length=255, required=False,
        help_text="Its client-credentials tokens then act as this account, with the scopes "
        "ticked below.",
    )
    scopes = forms.MultipleChoiceField(choices=Scope.choices, required=False,
                                       initial=[Scope.READ])

    def __init__(self, *args, link_keycloak: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if not link_keycloak:
            del self.fields["keycloak_client_id"]
