"""The signed-in user's own pages: the sign-in page, and personal API tokens.

Thin views over core.tokens (create and revoke are audited there).
"""

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from .api.scopes import SCOPE_HELP, Scope
from .confirmation import confirmation_page, is_confirmed
from .tokens import api_token_create, api_token_revoke, api_tokens_of
from .validators import validate_readable_name

LOCAL_LOGIN_OFF = "Password sign-in is turned off: use “Sign in with Keycloak”."


class PortalLoginView(auth_views.LoginView):
    """Django's sign-in page; its password form refuses to work when LOCAL_LOGIN_ENABLED is off
    (the page then offers only Keycloak)."""

    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        if not settings.LOCAL_LOGIN_ENABLED:
            form = self.get_form()
            form.errors.clear()
            form.add_error(None, LOCAL_LOGIN_OFF)
            return self.render_to_response(self.get_context_data(form=form), status=403)
        return super().post(request, *args, **kwargs)


class ApiTokenForm(forms.Form):
    EXPIRY_DAYS = (7, 30, 90, 180, 365)

    name = forms.CharField(max_length=100, validators=[validate_readable_name])
    expires_in_days = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    scopes = forms.MultipleChoiceField(
        choices=Scope.choices, initial=[Scope.READ], widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Pick at least one scope."},
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Only lifetimes within API_TOKEN_MAX_LIFETIME_DAYS are offered; "" means that maximum.
        longest = settings.API_TOKEN_MAX_LIFETIME_DAYS
        self.fields["expires_in_days"].choices = [
            ("", f"The longest allowed ({longest} days)"),
            *((str(days), f"In {days} days") for days in self.EXPIRY_DAYS if days <= longest),
        ]


def scope_choices(form) -> list[dict]:
    """The scope checkboxes: value, label, what it allows, and whether it is ticked."""
    ticked = {str(v) for v in (form["scopes"].value() or [])}
    return [{"value": value, "label": label, "help": SCOPE_HELP[value], "checked": value in ticked}
            for value, label in Scope.choices]


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request):
    """List your tokens with their last use; create one (its raw value is shown once, here)."""
    issued = None
    form = ApiTokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data["expires_in_days"]
        try:
            issued = api_token_create(
                user=request.user,
                name=form.cleaned_data["name"],
                expires_at=timezone.now() + timedelta(days=days) if days else None,
                scopes=form.cleaned_data["scopes"],
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            form = ApiTokenForm()
    status = 400 if request.method == "POST" and issued is None else 200
    context = {"tokens": api_tokens_of(user=request.user), "form": form, "issued": issued,
               "scope_choices": scope_choices(form)}
    return render(request, "portal/api_tokens.html", context, status=status)


@login_required
@require_POST
def api_token_revoke_view(request, token_id: int):
    """Revoke one of your own tokens (another user's token is a 404)."""
    token = get_object_or_404(api_tokens_of(user=request.user), pk=token_id)
    if not is_confirmed(request, name=token.name):
        return confirmation_page(
            request, name=token.name, title=f"Revoke the API token “{token.name}”?",
            consequences=["Scripts, Terraform and CI using it get 401 from the next call.",
                          "A revoked token cannot be restored; create a new one instead."],
            submit_label=f"Revoke “{token.name}”", cancel_url=reverse("api-tokens"),
        )
    api_token_revoke(token=token, actor=request.user)
    messages.success(request, f"Token “{token.name}” revoked: scripts using it now get 401.")
    return redirect("api-tokens")
