"""Tenant pages about the tenant itself and its members: thin views over selectors and
services."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.confirmation import confirmation_page, is_confirmed
from core.paging import url_maker

from ..access import services
from ..access.forms import MemberAddForm, MemberRoleForm
from ..access.models import Membership, Source, Tenant
from ..access.rules import access_for
from ..access.selectors import tenant_members, tenant_members_summary, tenants_for_list
from ..pages import redirect_to_current, tenant_page
from ..quota.models import resource_label
from ..quota.selectors import tenant_quota_lines, tenant_quota_requests_recent
from ..workloads.selectors import tenant_idle_episodes, tenant_workloads_recent
from .selectors import tenant_gpu_admission

TENANT_PAGE_SIZE = 50


@login_required
def home(request):
    return redirect_to_current(request, "tenants:dashboard")


@login_required
def tenant_list(request):
    """The tenants a person may open, 50 a page: finance and platform admins reach every
    tenant's pages (2,000 at fleet scale), and find one by name, slug or cost center."""
    # Nobody's list is empty but for people with no role at all (memberships count only in
    # active tenants, which are also the only ones they see).
    if not access_for(request.user).has_any_access:
        raise PermissionDenied
    search = request.GET.get("q", "").strip()[:100]
    status = request.GET.get("status", "")
    if status not in Tenant.Status.values:
        status = ""
    paginator = Paginator(
        tenants_for_list(user=request.user, search=search, status=status), TENANT_PAGE_SIZE
    )
    page = paginator.get_page(request.GET.get("page"))
    return render(
        request,
        "tenants/tenant_list.html",
        {
            "page_obj": page,
            "tenants": _tenant_rows(list(page.object_list)),
            "search": search,
            "status": status,
            "statuses": Tenant.Status.choices,
        },
    )


def _tenant_rows(tenants) -> list[dict]:
    """Each tenant's values, with its labels and links (each URL reversed once for the
    page): what templates/tenants/tenant_list.html#tenant-row shows."""
    dashboard = url_maker("tenants:dashboard", "slug")
    quota = url_maker("tenants:quota-detail", "slug")
    requests = url_maker("tenants:quota-request-list", "slug")
    isolations = dict(Tenant.Isolation.choices)
    statuses = dict(Tenant.Status.choices)
    for t in tenants:
        t["isolation_label"] = isolations.get(t["isolation"], t["isolation"])
        t["status_label"] = statuses.get(t["status"], t["status"])
        t["dashboard_url"] = dashboard(t["slug"])
        t["quota_url"] = quota(t["slug"])
        t["requests_url"] = requests(t["slug"])
    return tenants


@login_required
def dashboard(request, slug: str):
    tenant, context = tenant_page(request, slug, "dashboard")
    requests = tenant_quota_requests_recent(tenant=tenant, limit=5)
    for r in requests:  # what each grants, in words
        r.asked = ", ".join(
            f"+{n:,} {resource_label(resource)}"
            for resource, n in zip(r.line_resources, r.line_granted, strict=True)
        )
    quota_lines = tenant_quota_lines(tenant=tenant)
    context |= {
        "quota_lines": quota_lines,
        "gpu_admission": tenant_gpu_admission(tenant=tenant, quota_lines=quota_lines),
        "recent_requests": requests,
        "recent_workloads": tenant_workloads_recent(tenant=tenant, limit=6),
        "members": tenant_members_summary(tenant=tenant),
        "idle_episodes": [e for e in tenant_idle_episodes(tenant=tenant)
                          if e.state != e.State.ACTED],
        # Each item links to its page: the prefixes reversed once, not once per item.
        "workload_prefix": reverse("tenants:workload-list", args=[tenant.slug]),
        "request_prefix": reverse("tenants:quota-request-list", args=[tenant.slug]),
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
