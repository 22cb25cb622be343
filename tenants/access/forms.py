"""Forms of the members page."""

from django import forms

from .models import Membership


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
