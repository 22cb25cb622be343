"""The tenant's model credentials page: the list, add, replace and delete. Owners and members
manage them; viewers and finance see names and kinds. No value is ever rendered."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.confirmation import confirmation_page, is_confirmed

from ..pages import tenant_page
from . import services
from .forms import CredentialAddForm, CredentialValuesForm
from .selectors import credential_get, credentials_for_page, may_manage_credentials


def _page(request, slug: str):
    tenant, context = tenant_page(request, slug, "credentials")
    context["can_manage_credentials"] = may_manage_credentials(request.user, tenant)
    return tenant, context


def _managed_credential(request, slug: str, name: str):
    """The page's tenant and context, and its credential `name` (a 404 if it has none): for
    those who manage credentials only (403 for the others)."""
    tenant, context = _page(request, slug)
    credential = credential_get(tenant=tenant, name=name)
    if not context["can_manage_credentials"]:
        raise PermissionDenied
    return tenant, context, credential


def _value_fields(form) -> dict:
    """The form's fields of each kind, for the template to group."""
    return {"hf_fields": [form["token"]],
            "s3_fields": [form[name] for name in ("access_key_id", "secret_access_key",
                                                  "s3_endpoint", "s3_region", "s3_use_https")]}


@login_required
def credential_list(request, slug: str):
    tenant, context = _page(request, slug)
    form = CredentialAddForm()
    if request.method == "POST":
        if not context["can_manage_credentials"]:
            raise PermissionDenied
        form = CredentialAddForm(request.POST)
        if form.is_valid():
            try:
                credential = services.credential_create(
                    actor=request.user, tenant=tenant, name=form.cleaned_data["name"],
                    kind=form.cleaned_data["kind"], values=form.values(), **form.s3_settings(),
                )
            except ValidationError as exc:
                form.add_service_errors(exc)
            else:
                messages.success(request, f"{credential.name} is stored; its Secret is being "
                                          f"written into {tenant.namespace}.")
                return redirect("tenants:credential-list", tenant.slug)
    context |= {"credentials": credentials_for_page(tenant=tenant), "form": form,
                "common_fields": [form["name"], form["kind"]], **_value_fields(form)}
    return render(request, "tenants/credentials.html", context)


@login_required
def credential_detail(request, slug: str, name: str):
    """Replace a credential's values (write-only: the old ones are never shown)."""
    tenant, context, credential = _managed_credential(request, slug, name)
    form = CredentialValuesForm(initial={"s3_endpoint": credential.s3_endpoint,
                                         "s3_region": credential.s3_region,
                                         "s3_use_https": credential.s3_use_https})
    if request.method == "POST":
        form = CredentialValuesForm(request.POST)
        if form.is_valid():
            try:
                services.credential_replace(actor=request.user, credential=credential,
                                            values=form.values(), **form.s3_settings())
            except ValidationError as exc:
                form.add_service_errors(exc)
            else:
                messages.success(request, f"{credential.name}'s values are replaced. Running "
                                          "endpoints read them when their pods next start.")
                return redirect("tenants:credential-list", tenant.slug)
    context |= {"credential": credential, "form": form, **_value_fields(form)}
    return render(request, "tenants/credential_replace.html", context)


@login_required
@require_POST
def credential_delete(request, slug: str, name: str):
    tenant, _, credential = _managed_credential(request, slug, name)
    if not is_confirmed(request, name=credential.name):
        return confirmation_page(
            request, name=credential.name, title=f"Delete the credential {credential.name}?",
            consequences=[f"Its Secret is removed from {tenant.namespace}.",
                          "Endpoints launched later cannot pick it; the values are gone for "
                          "good (add them again to use them)."],
            submit_label=f"Delete {credential.name}",
            cancel_url=reverse("tenants:credential-list", args=[tenant.slug]),
        )
    try:
        services.credential_delete(actor=request.user, credential=credential)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"{credential.name} is deleted.")
    return redirect("tenants:credential-list", tenant.slug)
