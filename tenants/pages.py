"""What every tenant page shows around its content: the tenant (a 404 for anyone who may not
see it), the user's other tenants, their role and what it lets them do; and the "current
tenant" the top-level links open."""

from django.shortcuts import redirect
from django.urls import reverse

from .access.models import Membership
from .access.rules import access_for, tenant_get_for_user
from .access.selectors import tenant_for_dashboard, tenants_of_member

CURRENT_TENANT_KEY = "current_tenant"


def tenant_page(request, slug, page: str):
    tenant = tenant_get_for_user(user=request.user, slug=slug)
    # Written only when it changes: assigning it, even unchanged, saves the session again
    # (three statements on every tenant page).
    if request.session.get(CURRENT_TENANT_KEY) != tenant.slug:
        request.session[CURRENT_TENANT_KEY] = tenant.slug
    role = access_for(request.user).tenant_roles.get(tenant.pk)
    platform_admin = access_for(request.user).platform_admin
    return tenant, {
        "tenant": tenant,
        "my_tenants": tenants_of_member(user=request.user),
        "page": page,
        "my_role": role,
        "can_request": platform_admin or role in {Membership.Role.OWNER, Membership.Role.MEMBER},
        "can_manage": platform_admin or role == Membership.Role.OWNER,
    }


def redirect_to_current(request, url_name: str):
    tenant = tenant_for_dashboard(user=request.user, slug=request.session.get(CURRENT_TENANT_KEY))
    if tenant is None:
        return redirect("no-access")
    return redirect(reverse(url_name, kwargs={"slug": tenant.slug}))
