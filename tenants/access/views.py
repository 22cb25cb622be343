"""Tenant pages about the tenant itself and its members: thin views over selectors and
services."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from portal.confirmation import confirmation_page, is_confirmed

from ..pages import redirect_to_current, tenant_page
from ..quota.selectors import tenant_quota_lines, tenant_quota_requests
from ..workloads.selectors import tenant_workloads
from . import services
from .forms import MemberAddForm, MemberRoleForm
from .models import Membership, Source
from .rules import access_for
from .selectors import tenant_members, tenants_for_list


@login_required
def home(request):
    return redirect_to_current(request, "tenants:dashboard")


@login_required
def tenant_list(request):
    """The tenants a person may open: finance and platform admins reach every tenant's pages."""
    tenants = list(tenants_for_list(user=request.user))
    if not tenants and not access_for(request.user).sees_all_tenants:
        raise PermissionDenied
    return render(request, "tenants/tenant_list.html", {"tenants": tenants})


@login_required
def dashboard(request, slug: str):
    tenant, context = tenant_page(request, slug, "dashboard")
    context |= {
        "members": tenant_members(tenant=tenant),
        "quota_lines": tenant_quota_lines(tenant=tenant),
        "recent_requests": tenant_quota_requests(tenant=tenant)[:5],
        "recent_workloads": tenant_workloads(tenant=tenant)[:6],
    }
    return render(request, "tenants/dashboard.html", context)


# --- members ----------------------------------------------------------------------------------


@login_required
def member_list(request, slug: str):
    tenant, context = tenant_page(request, slug, "members")
    form = MemberAddForm()
    if request.method == "POST":
        if not context["can_manage"]:
            raise PermissionDenied
        form = MemberAddForm(request.POST)
        if form.is_valid():
            try:
                membership = services.tenant_member_add(
                    actor=request.user,
                    tenant=tenant,
                    username_or_email=form.cleaned_data["user"],
                    role=form.cleaned_data["role"],
                )
            except ValidationError as exc:
                for name, errors in exc.message_dict.items():
                    form.add_error(name if name in form.fields else None, errors)
            else:
                messages.success(
                    request, f"{membership.user.get_username()} is now {membership.role}."
                )
                return redirect("tenants:member-list", tenant.slug)
    context |= {
        "members": tenant_members(tenant=tenant),
        "form": form,
        "role_choices": Membership.Role.choices,
        "keycloak": Source.KEYCLOAK,
    }
    return render(request, "tenants/members.html", context)


@login_required
@require_POST
def member_change(request, slug: str, pk: int):
    tenant, context = tenant_page(request, slug, "members")
    membership = get_object_or_404(tenant.memberships.select_related("user"), pk=pk)
    if not context["can_manage"]:
        raise PermissionDenied
    username = membership.user.get_username()
    removable = membership.source != Source.KEYCLOAK  # Keycloak's are refused by the service
    if "remove" in request.POST and removable and not is_confirmed(request, name=username):
        return confirmation_page(
            request, name=username, title=f"Remove {username} from {tenant.name}?",
            consequences=[f"{username} loses access to {tenant.name}'s quota, workloads and "
                          "invoices at once.", "Their API tokens no longer reach this tenant."],
            submit_label=f"Remove {username}",
            cancel_url=reverse("tenants:member-list", args=[tenant.slug]), keep=("remove",),
        )
    try:
        if "remove" in request.POST:
            services.tenant_member_remove(actor=request.user, membership=membership)
            messages.success(request, f"{membership.user.get_username()} removed.")
        else:
            form = MemberRoleForm(request.POST)
            if not form.is_valid():
                raise ValidationError({"role": form.errors.get("role", ["Pick a role."])})
            services.tenant_member_change_role(
                actor=request.user, membership=membership, role=form.cleaned_data["role"]
            )
            role = form.cleaned_data["role"]
            messages.success(request, f"{membership.user.get_username()} is now {role}.")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("tenants:member-list", tenant.slug)
