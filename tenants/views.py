"""Tenant pages: thin views over tenants' selectors and services."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from portal.confirmation import confirmation_page, is_confirmed
from portal.state_machine import InvalidTransition

from . import quota_requests, services
from .access import access_for, tenant_get_for_user
from .forms import (
    MemberAddForm,
    MemberRoleForm,
    QuotaRequestForm,
    QuotaRequestLineFormSet,
    lenient_lines,
    line_initial,
)
from .models import Membership, QuotaRequest, Source
from .selectors import (
    quota_preview,
    quota_request_get_for_user,
    quota_requests_open,
    tenant_for_dashboard,
    tenant_members,
    tenant_quota_lines,
    tenant_quota_requests,
    tenant_schedulable,
    tenants_for_list,
    tenants_of_member,
)

CURRENT_TENANT_KEY = "current_tenant"
HISTORY_PAGE_SIZE = 25


def _tenant_page(request, slug, page: str):
    tenant = tenant_get_for_user(user=request.user, slug=slug)
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
def tenant_list(request):
    """The tenants a person may open: finance and platform admins reach every tenant's pages."""
    tenants = list(tenants_for_list(user=request.user))
    if not tenants and not access_for(request.user).sees_all_tenants:
        raise PermissionDenied
    return render(request, "tenants/tenant_list.html", {"tenants": tenants})


@login_required
def dashboard(request, slug: str):
    tenant, context = _tenant_page(request, slug, "dashboard")
    context |= {
        "members": tenant_members(tenant=tenant),
        "quota_lines": tenant_quota_lines(tenant=tenant),
        "recent_requests": tenant_quota_requests(tenant=tenant)[:5],
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
    context["schedulable"] = tenant_schedulable(tenant=tenant)
    context["open_requests"] = tenant_quota_requests(tenant=tenant).filter(
        status__in=QuotaRequest.OPEN
    )
    return render(request, "tenants/quota.html", context)


@login_required
def cluster_status(request, slug: str):
    """The htmx partial: applied on the cluster at …, applying, or the cluster's error.

    It polls itself while the cluster lags the database and stops once they agree.
    """
    tenant = tenant_get_for_user(user=request.user, slug=slug)
    return render(request, "tenants/_cluster_status.html", {"tenant": tenant})


# --- quota requests ---------------------------------------------------------------------------


@login_required
def quota_request_list(request, slug: str):
    tenant, context = _tenant_page(request, slug, "requests")
    paginator = Paginator(tenant_quota_requests(tenant=tenant), HISTORY_PAGE_SIZE)
    context["page_obj"] = paginator.get_page(request.GET.get("page"))
    return render(request, "tenants/quota_request_list.html", context)


def _request_forms(tenant, data=None, initial_lines=None, initial=None):
    form = QuotaRequestForm(data, initial=initial)
    formset = QuotaRequestLineFormSet(
        data,
        initial=initial_lines,
        prefix="lines",
        form_kwargs={"isolation": tenant.isolation},
    )
    return form, formset


@login_required
def quota_request_create(request, slug: str):
    tenant, context = _tenant_page(request, slug, "requests")
    if not context["can_request"]:
        raise PermissionDenied
    if request.method == "POST" and "add_line" in request.POST:
        # Redraw the form with one more row, keeping what was typed, without judging it yet.
        form, formset = _request_forms(
            tenant,
            initial_lines=line_initial(request.POST),
            initial={
                "justification": request.POST.get("justification", ""),
                "ends_on": request.POST.get("ends_on", ""),
            },
        )
    elif request.method == "POST":
        form, formset = _request_forms(tenant, request.POST)
        if form.is_valid() and formset.is_valid():
            try:
                created = quota_requests.quota_request_create(
                    tenant=tenant,
                    requested_by=request.user,
                    lines=[{"resource": r, "amount": a} for r, a in formset.lines()],
                    justification=form.cleaned_data["justification"],
                    ends_on=form.cleaned_data["ends_on"],
                )
            except ValidationError as exc:
                for name, errors in exc.message_dict.items():
                    form.add_error(name if name in form.fields else None, errors)
            else:
                messages.success(request, f"Quota request #{created.pk} sent to the platform team.")
                return redirect("tenants:quota-request-detail", tenant.slug, created.pk)
    else:
        form, formset = _request_forms(tenant, initial_lines=[{}])
    lines = lenient_lines(request.POST) if request.method == "POST" else []
    context |= {
        "form": form,
        "formset": formset,
        "preview": quota_preview(tenant=tenant, lines=lines),
    }
    template = "tenants/quota_request_form.html"
    if request.htmx and "add_line" in request.POST:
        template += "#request-form"
    return render(request, template, context)


@login_required
@require_POST
def quota_request_preview(request, slug: str):
    """The htmx partial: the resulting quota and whether the fleet has capacity for it."""
    tenant, context = _tenant_page(request, slug, "quota")
    if not context["can_request"]:
        raise PermissionDenied
    context["preview"] = quota_preview(tenant=tenant, lines=lenient_lines(request.POST))
    return render(request, "tenants/quota_request_form.html#preview", context)


def _tenant_request(request, slug: str, pk: int) -> QuotaRequest:
    quota_request = quota_request_get_for_user(user=request.user, request_id=pk)
    if quota_request.tenant.slug != slug:
        raise Http404
    return quota_request


@login_required
def quota_request_detail(request, slug: str, pk: int):
    quota_request = _tenant_request(request, slug, pk)
    _, context = _tenant_page(request, slug, "requests")
    context |= {
        "quota_request": quota_request,
        "can_withdraw": quota_requests.can_withdraw(request.user, quota_request),
    }
    if request.htmx:
        return render(request, "tenants/quota_request_detail.html#status", context)
    return render(request, "tenants/quota_request_detail.html", context)


@login_required
@require_POST
def quota_request_withdraw(request, slug: str, pk: int):
    quota_request = _tenant_request(request, slug, pk)
    name = f"quota request #{quota_request.pk}"
    if quota_requests.can_withdraw(request.user, quota_request) and not is_confirmed(
        request, name=name
    ):
        asked = ", ".join(
            f"+{line.amount:,} {line.resource_label}" for line in quota_request.lines.all()
        )
        return confirmation_page(
            request, name=name, title=f"Withdraw {name}?",
            consequences=[f"It asked for {asked}." if asked else "It asked for no resources.",
                          "Platform admins no longer see it; ask again with a new request."],
            submit_label=f"Withdraw {name}",
            cancel_url=reverse("tenants:quota-request-detail", args=[slug, quota_request.pk]),
        )
    try:
        quota_requests.quota_request_withdraw(request_id=quota_request.pk, actor=request.user)
    except InvalidTransition:
        messages.error(request, "This request was already decided; it can no longer be withdrawn.")
    else:
        messages.success(request, f"Quota request #{quota_request.pk} withdrawn.")
    return redirect("tenants:quota-request-detail", slug, quota_request.pk)


# --- members ----------------------------------------------------------------------------------


@login_required
def member_list(request, slug: str):
    tenant, context = _tenant_page(request, slug, "members")
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
    tenant, context = _tenant_page(request, slug, "members")
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


# --- the platform admins' queue ---------------------------------------------------------------


@login_required
def request_queue(request):
    if not access_for(request.user).platform_admin:
        raise PermissionDenied
    queue = list(quota_requests_open())
    return render(
        request,
        "tenants/requests.html",
        {
            "waiting": [r for r in queue if r.status == QuotaRequest.Status.SUBMITTED],
            "on_the_way": [r for r in queue if r.status != QuotaRequest.Status.SUBMITTED],
        },
    )
