"""What every tenant page shows around its content: the tenant (a 404 for anyone who may not
see it), the user's other tenants, their role and what it lets them do; and the "current
tenant" the top-level links open."""

from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse

from core.paging import url_maker
from core.request_context import note_tenant

from .access.models import Membership, Tenant
from .access.rules import access_for, tenant_get_for_user, tenants_visible_to
from .access.selectors import tenant_for_dashboard, tenants_of_member

CURRENT_TENANT_KEY = "current_tenant"

# The tenant's pages every tenant page links to (its header's tabs and buttons), built from a
# pattern reversed once per process instead of a `{% url %}` each (~30 µs apiece).
TENANT_URLS = {
    "dashboard": "tenants:dashboard",
    "quota": "tenants:quota-detail",
    "requests": "tenants:quota-request-list",
    "request_quota": "tenants:quota-request-create",
    "members": "tenants:member-list",
    "credentials": "tenants:credential-list",
    "webhooks": "tenants:webhook-list",
    "workloads": "tenants:workload-list",
    "idle": "tenants:idle-gpus",
    "launch": "tenants:workload-new",
    "spend": "billing:tenant-spend",
    "spend_card": "billing:tenant-spend-card",
}


def tenant_urls(slug: str) -> dict[str, str]:
    return {key: url_maker(name, "slug")(slug) for key, name in TENANT_URLS.items()}


def tenant_page(request, slug, page: str, *, tenant: Tenant | None = None):
    """The tenant `slug` and what its pages show around their content. `tenant`: the caller
    already read it, through a selector scoped to the user (a workload's tenant)."""
    my_tenants = None
    if tenant is None or tenant.slug != slug:
        tenant, my_tenants = _tenant_and_mine(request.user, slug)
    # Written only when it changes: assigning it, even unchanged, saves the session again
    # (three statements on every tenant page).
    if request.session.get(CURRENT_TENANT_KEY) != tenant.slug:
        request.session[CURRENT_TENANT_KEY] = tenant.slug
    note_tenant(tenant.slug)  # the request's later log lines name it
    role = access_for(request.user).tenant_roles.get(tenant.pk)
    platform_admin = access_for(request.user).platform_admin
    return tenant, {
        "tenant": tenant,
        "tenant_urls": tenant_urls(tenant.slug),
        "my_tenants": tenants_of_member(user=request.user) if my_tenants is None else my_tenants,
        "page": page,
        "my_role": role,
        "can_request": platform_admin or role in {Membership.Role.OWNER, Membership.Role.MEMBER},
        "can_manage": platform_admin or role == Membership.Role.OWNER,
    }


def _tenant_and_mine(user, slug: str) -> tuple[Tenant, list[Tenant] | None]:
    """The tenant `slug` (a 404 unless visible) and, for a tenant's people, the switcher's
    tenants from the same query: theirs are exactly the tenants they see. Finance and platform
    admins see every tenant; their switcher (None: queried by the caller) lists memberships."""
    if access_for(user).sees_all_tenants:
        return tenant_get_for_user(user=user, slug=slug), None
    mine = list(tenants_visible_to(user).order_by("name"))
    tenant = next((t for t in mine if t.slug == slug), None)
    if tenant is None:
        raise Http404("No tenant matches the given query.")
    return tenant, mine


def redirect_to_current(request, url_name: str):
    tenant = tenant_for_dashboard(user=request.user, slug=request.session.get(CURRENT_TENANT_KEY))
    if tenant is None:
        return redirect("no-access")
    return redirect(reverse(url_name, kwargs={"slug": tenant.slug}))
