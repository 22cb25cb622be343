"""The tenant's service accounts page (next to its members): thin views over
tenants.access.service_accounts. Everyone who sees the tenant reads it; owners act."""

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from core.account import ApiTokenForm, scope_choices
from core.confirmation import confirmation_page, is_confirmed

from ..access import service_accounts as services
from ..access.forms import ServiceAccountForm
from ..access.rules import is_platform_admin
from ..access.selectors import service_account_get, tenant_service_accounts
from ..pages import tenant_page

PAGE = "tenants:service-account-list"


def _errors_onto(form, exc: ValidationError) -> None:
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)


def _page(request, tenant, context, *, form=None, token_form=None, token_for=None, issued=None,
          status=200):
    link_keycloak = is_platform_admin(request.user)
    form = form or ServiceAccountForm(link_keycloak=link_keycloak)
    token_form = token_form or ApiTokenForm()
    context |= {
        "link_keycloak": link_keycloak,
        "accounts": tenant_service_accounts(tenant=tenant),
        "form": form,
        "account_scopes": scope_choices(form),
        "token_form": token_form,
        "token_scopes": scope_choices(token_form),
        "token_for": token_for,
        "issued": issued,
    }
    return render(request, "tenants/service_accounts.html", context, status=status)


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def service_account_list(request, slug: str):
    tenant, context = tenant_page(request, slug, "members")
    if request.method == "GET":
        return _page(request, tenant, context)
    if not context["can_manage"]:
        raise PermissionDenied
    form = ServiceAccountForm(request.POST, link_keycloak=is_platform_admin(request.user))
    if form.is_valid():
        try:
            account = services.service_account_create(
                actor=request.user, tenant=tenant, name=form.cleaned_data["name"],
                role=form.cleaned_data["role"], scopes=form.cleaned_data["scopes"],
                keycloak_client_id=form.cleaned_data.get("keycloak_client_id"),
            )
        except ValidationError as exc:
            _errors_onto(form, exc)
        else:
            messages.success(request, f"Service account “{account.name}” created: issue it a "
                             "token below.")
            return redirect(PAGE, tenant.slug)
    return _page(request, tenant, context, form=form, status=400)


def _managed_account(request, slug: str, pk: int):
    """The tenant, its page's context and its service account `pk`, for one of its owners
    (another tenant's account is a 404, a non-owner's request a 403)."""
    tenant, context = tenant_page(request, slug, "members")
    account = service_account_get(tenant=tenant, pk=pk)
    if not context["can_manage"]:
        raise PermissionDenied
    return tenant, context, account


@login_required
@require_POST
def service_account_change(request, slug: str, pk: int):
    """Disable, enable or delete (after a confirmation) one service account."""
    tenant, _, account = _managed_account(request, slug, pk)
    if "delete" in request.POST:
        if not is_confirmed(request, name=account.name):
            return confirmation_page(
                request, name=account.name, title=f"Delete the service account “{account.name}”?",
                consequences=["Its tokens stop working at once (401), and so do its Keycloak "
                              "client's tokens.", "It cannot be restored; disable it instead "
                              "to stop it for a while."],
                submit_label=f"Delete “{account.name}”", keep=("delete",),
                cancel_url=reverse(PAGE, args=[tenant.slug]),
            )
        services.service_account_delete(actor=request.user, account=account)
        messages.success(request, f"Service account “{account.name}” deleted.")
    else:
        disabled = "disable" in request.POST
        services.service_account_set_disabled(actor=request.user, account=account,
                                              disabled=disabled)
        messages.success(request, f"Service account “{account.name}” "
                         f"{'disabled: its tokens now get 401' if disabled else 'enabled'}.")
    return redirect(PAGE, tenant.slug)


@never_cache
@login_required
@require_POST
def service_account_token_create(request, slug: str, pk: int):
    """Issue a token (its value is shown once, on the page this answers)."""
    tenant, context, account = _managed_account(request, slug, pk)
    form = ApiTokenForm(request.POST)
    if form.is_valid():
        days = form.cleaned_data["expires_in_days"]
        try:
            issued = services.service_account_token_create(
                actor=request.user, account=account, name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                expires_at=timezone.now() + timedelta(days=days) if days else None,
            )
        except ValidationError as exc:
            _errors_onto(form, exc)
        else:
            return _page(request, tenant, context, issued=issued, token_for=account.pk)
    return _page(request, tenant, context, token_form=form, token_for=account.pk, status=400)


@login_required
@require_POST
def service_account_token_revoke(request, slug: str, pk: int, token_id: int):
    tenant, _, account = _managed_account(request, slug, pk)
    token = get_object_or_404(account.user.api_tokens.all(), pk=token_id)
    if not is_confirmed(request, name=token.name):
        return confirmation_page(
            request, name=token.name, title=f"Revoke “{token.name}” of {account.name}?",
            consequences=["CI jobs using it get 401 from the next call.",
                          "A revoked token cannot be restored; issue a new one instead."],
            submit_label=f"Revoke “{token.name}”", cancel_url=reverse(PAGE, args=[tenant.slug]),
        )
    services.service_account_token_revoke(actor=request.user, account=account, token=token)
    messages.success(request, f"Token “{token.name}” of {account.name} revoked.")
    return redirect(PAGE, tenant.slug)
