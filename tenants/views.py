"""Tenant pages: thin views over tenants' selectors."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse

from .access import access_for, tenant_get_for_user
from .selectors import tenant_for_dashboard, tenant_members, tenant_quota_lines, tenants_of_member

CURRENT_TENANT_KEY = "current_tenant"


def _tenant_page(request, slug, page: str):
    tenant = tenant_get_for_user(user=request.user, slug=slug)
    request.session[CURRENT_TENANT_KEY] = tenant.slug
    return tenant, {
        "tenant": tenant,
        "my_tenants": tenants_of_member(user=request.user),
        "page": page,
    }


def _redirect_to_current(request, url_name: str):
    tenant = tenant_for_dashboard(user=request.user, slug=request.session.get(CURRENT_TENANT_KEY))
    if tenant is None:
        return redirect("no-access")
    return redirect(reverse(url_name, kwargs={"slug": tenant.slug}))


@login_required
def home(request):
    return _redirect_to_current(request, "tenants:dashboard")


@login_required
def workloads_home(request):
    return _redirect_to_current(request, "tenants:workload-list")


@login_required
def quota_home(request):
    return _redirect_to_current(request, "tenants:quota-detail")


@login_required
def dashboard(request, slug: str):
    tenant, context = _tenant_page(request, slug, "dashboard")
    context |= {
        "members": tenant_members(tenant=tenant),
        "quota_lines": tenant_quota_lines(tenant=tenant),
    }
    return render(request, "tenants/dashboard.html", context)


@login_required
def workload_list(request, slug: str):
    _, context = _tenant_page(request, slug, "workloads")
    return render(request, "tenants/workloads.html", context)


@login_required
def quota_detail(request, slug: str):
    tenant, context = _tenant_page(request, slug, "quota")
    context["quota_lines"] = tenant_quota_lines(tenant=tenant)
    return render(request, "tenants/quota.html", context)


@login_required
def request_queue(request):
    if not access_for(request.user).platform_admin:
        raise PermissionDenied
    return render(request, "tenants/requests.html")
