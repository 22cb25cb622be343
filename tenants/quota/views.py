"""Quota pages: what a tenant holds, its requests for more, and the platform admins' queue."""

from functools import cache

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.confirmation import confirmation_page, is_confirmed
from core.paging import page_size_from, url_maker
from inventory import resource_classes

from ..access.rules import access_for
from ..access.services import tenant_gpu_lending_set
from ..enforcement.presence import tenant_presence
from ..pages import redirect_to_current, tenant_page
from . import rules as quota_rules
from . import services as quota_requests
from .forms import (
    GpuLendingForm,
    QuotaRequestForm,
    QuotaRequestLineFormSet,
    lenient_lines,
    line_initial,
)
from .models import QuotaRequest, resource_label
from .pricing import quoted_price
from .selectors import (
    quota_preview,
    quota_request_get_for_user,
    quota_requests_on_the_way,
    quota_requests_pending_count,
    quota_requests_waiting,
    tenant_pending_asks,
    tenant_quota_lines,
    tenant_quota_requests,
    tenant_schedulable,
)

HISTORY_PAGE_SIZE = 25
# The review queue: 50 requests a page; up to 400 (a fleet's whole queue) on request.
QUEUE_PAGE_SIZE = 50
QUEUE_MAX_PAGE_SIZE = 400
# Approved requests still applying on the cluster: normally a few; past this many the queue
# links to the rest in Django admin instead of growing.
ON_THE_WAY_SHOWN = 50


@login_required
def waiting_count(request) -> int:
    """Quota requests waiting for a decision, counted once per request: the navigation's badge
    and the review queue show the same number."""
    if not hasattr(request, "_quota_requests_waiting"):
        request._quota_requests_waiting = quota_requests_pending_count()
    return request._quota_requests_waiting


def quota_home(request):
    return redirect_to_current(request, "tenants:quota-detail")


@login_required
def quota_detail(request, slug: str):
    """What the tenant holds; a dedicated tenant's owners choose here whether its cohort may
    borrow its idle reserved GPUs (POST)."""
    tenant, context = tenant_page(request, slug, "quota")
    lending = GpuLendingForm(initial={"lends_reserved_gpus": tenant.lends_reserved_gpus})
    if request.method == "POST":
        if not context["can_manage"]:
            raise PermissionDenied
        lending = GpuLendingForm(request.POST)
        if lending.is_valid():
            try:
                tenant_gpu_lending_set(actor=request.user, tenant=tenant,
                                       lends=lending.cleaned_data["lends_reserved_gpus"])
            except ValidationError as exc:
                lending.add_error(None, exc)
            else:
                messages.success(request, "Saved: the cluster's queues follow in a moment.")
                return redirect("tenants:quota-detail", slug)
    context["lending_form"] = lending
    context["quota_lines"] = tenant_quota_lines(tenant=tenant)
    context["presence"] = tenant_presence(tenant)
    context["schedulable"] = tenant_schedulable(tenant=tenant)
    context["open_requests"] = tenant_quota_requests(tenant=tenant).filter(
        status__in=QuotaRequest.OPEN
    )
    return render(request, "tenants/quota.html", context, status=400 if lending.errors else 200)


# --- quota requests ---------------------------------------------------------------------------


@login_required
def quota_request_list(request, slug: str):
    tenant, context = tenant_page(request, slug, "requests")
    paginator = Paginator(tenant_quota_requests(tenant=tenant), HISTORY_PAGE_SIZE)
    context["page_obj"] = paginator.get_page(request.GET.get("page"))
    # Each row links to its request: the prefix reversed once, not once per row.
    context["request_prefix"] = reverse("tenants:quota-request-list", args=[tenant.slug])
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


def _where(data) -> str | None:
    """The cluster a (prospective) request names, if it is one quota may be asked on."""
    cluster = data.get("cluster") or None
    return cluster if cluster in quota_rules.clusters_offered() else None


def _prefilled_lines(query) -> list[dict]:
    """`?resource=<class>&amount=<n>` (repeated), as the launch form's "request more quota"
    link fills them in: the rows to start from (anything that does not parse is left out)."""
    rows = []
    for resource, amount in zip(query.getlist("resource"), query.getlist("amount"), strict=False):
        try:
            resource_classes.parse(resource)
            amount = int(amount)
        except (TypeError, ValueError):
            continue
        if amount > 0 and len(rows) < quota_rules.MAX_LINES:
            rows.append({"resource": resource, "amount": amount})
    return rows or [{}]


def _pending_words(asks) -> str:
    return "; ".join(f"request #{ask.request_id} ({ask.status_label.lower()}) already asks for "
                     f"+{ask.amount:,} {ask.label}" for ask in asks)


@login_required
def quota_request_create(request, slug: str):
    tenant, context = tenant_page(request, slug, "requests")
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
                "cluster": request.POST.get("cluster", ""),
            },
        )
    elif request.method == "POST":
        form, formset = _request_forms(tenant, request.POST)
        if form.is_valid() and formset.is_valid():
            asked = formset.lines()
            try:
                created = quota_requests.quota_request_create(
                    tenant=tenant,
                    requested_by=request.user,
                    lines=[{"resource": r, "amount": a} for r, a in asked],
                    justification=form.cleaned_data["justification"],
                    ends_on=form.cleaned_data["ends_on"],
                    cluster=form.cleaned_data["cluster"],
                    quote=quoted_price(asked),
                )
            except ValidationError as exc:
                for name, errors in exc.message_dict.items():
                    form.add_error(name if name in form.fields else None, errors)
            else:
                messages.success(request, f"Quota request #{created.pk} sent: it waits for a "
                                          "platform admin's decision.")
                earlier = [ask for ask in tenant_pending_asks(tenant=tenant,
                                                              resources=[r for r, _ in asked])
                           if ask.request_id != created.pk]
                if earlier:
                    messages.warning(request, f"Both are now waiting: {_pending_words(earlier)}. "
                                              "Withdraw one if it was asked twice by mistake.")
                return redirect("tenants:quota-request-detail", tenant.slug, created.pk)
    else:
        form, formset = _request_forms(tenant, initial_lines=_prefilled_lines(request.GET))
    if request.method == "POST":
        lines = lenient_lines(request.POST)
    else:
        lines = [(row["resource"], row["amount"]) for row in _prefilled_lines(request.GET) if row]
    context |= {
        "form": form,
        "formset": formset,
        "preview": quota_preview(tenant=tenant, lines=lines, cluster=_where(request.POST)),
        "pending": tenant_pending_asks(tenant=tenant, resources=[r for r, _ in lines]),
    }
    template = "tenants/quota_request_form.html"
    if request.htmx and "add_line" in request.POST:
        template += "#request-form"
    return render(request, template, context)


@login_required
@require_POST
def quota_request_preview(request, slug: str):
    """The htmx partial: the resulting quota and whether the fleet has capacity for it."""
    tenant, context = tenant_page(request, slug, "quota")
    if not context["can_request"]:
        raise PermissionDenied
    lines = lenient_lines(request.POST)
    context["preview"] = quota_preview(tenant=tenant, lines=lines, cluster=_where(request.POST))
    context["pending"] = tenant_pending_asks(tenant=tenant, resources=[r for r, _ in lines])
    return render(request, "tenants/quota_request_form.html#preview", context)


def _tenant_request(request, slug: str, pk: int) -> QuotaRequest:
    quota_request = quota_request_get_for_user(user=request.user, request_id=pk)
    if quota_request.tenant.slug != slug:
        raise Http404
    return quota_request


@login_required
def quota_request_detail(request, slug: str, pk: int):
    quota_request = _tenant_request(request, slug, pk)
    _, context = tenant_page(request, slug, "requests")
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
    quota_requests.quota_request_withdraw(request_id=quota_request.pk, actor=request.user)
    messages.success(request, f"Quota request #{quota_request.pk} withdrawn.")
    return redirect("tenants:quota-request-detail", slug, quota_request.pk)


# --- the platform admins' queue ---------------------------------------------------------------


@login_required
def request_queue(request):
    """What waits for a platform admin's decision, oldest first, a page at a time (50, or
    `?page_size=` up to 400); and what was approved but is not applied on the cluster yet."""
    if not access_for(request.user).platform_admin:
        raise PermissionDenied
    paginator = Paginator(
        quota_requests_waiting(),
        page_size_from(request, default=QUEUE_PAGE_SIZE, maximum=QUEUE_MAX_PAGE_SIZE),
    )
    # The navigation's badge counts the same requests: one COUNT serves both.
    paginator.count = waiting_count(request)
    page = paginator.get_page(request.GET.get("page"))
    review_url = url_maker("admin:tenants_quotarequest_change", "pk")
    on_the_way = list(quota_requests_on_the_way()[: ON_THE_WAY_SHOWN + 1])
    return render(
        request,
        "tenants/requests.html",
        {
            "page_obj": page,
            "waiting": _queue_rows(list(page.object_list), review_url),
            # The next pages keep the size shown (capped), not the size asked for.
            "page_params": QueryDict(
                "" if paginator.per_page == QUEUE_PAGE_SIZE else f"page_size={paginator.per_page}"
            ),
            "on_the_way": [
                (request, review_url(request.pk)) for request in on_the_way[:ON_THE_WAY_SHOWN]
            ],
            "more_on_the_way": len(on_the_way) > ON_THE_WAY_SHOWN,
        },
    )


def _queue_rows(requests, review_url) -> list[dict]:
    """The queue's rows (`quota_requests_waiting`) with who asked and what, in words, and the
    link to review each: what templates/tenants/requests.html#queue-row shows."""
    label = cache(resource_label)  # a handful of classes among hundreds of lines
    for r in requests:
        who = " ".join(
            name for name in (r["requested_by__first_name"], r["requested_by__last_name"]) if name
        )
        r["who"] = who or r["requested_by__username"] or "—"
        r["asked"] = [
            f"+{n:,} {label(resource)}"
            for resource, n in zip(r["line_resources"], r["line_amounts"], strict=True)
        ]
        r["review_url"] = review_url(r["id"])
    return requests
