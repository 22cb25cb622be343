"""The cost breakdown's card on the spend page and in the usage explorer, and its CSV: a
tenant's cost by workload, person or label, as invoiced (`services.cost_breakdown`). The
tenant comes from the access rules: another tenant's is a 404. And finance's FOCUS export of a
month's billed usage (`services.focus_export`)."""

from __future__ import annotations

from datetime import date, timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from core.errors import RuleViolation
from tenants.access import tenant_get_for_user, tenants_visible_to
from tenants.models import Tenant

from ..cost_filters import CostBreakdownForm, FocusMonthForm, breakdown_csv, focus_response
from ..selectors.explorer import UsageFilter
from ..services.cost_breakdown import By, cost_breakdown, month_range
from ..services.exports import cost_export_record
from ..services.focus_export import focus_export
from .access import finance_required


def _query_without(request, *names: str) -> str:
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    return query.urlencode()


def _card(tenant: Tenant, *, by: str, period, csv_query: str) -> dict:
    """The card's context: the breakdown, or why there is none."""
    context = {"breakdown": None, "breakdown_error": "", "breakdown_choices": By.CHOICES,
               "breakdown_csv_url": ""}
    try:
        context["breakdown"] = cost_breakdown(tenant=tenant, by=by, start=period[0],
                                              end=period[1])
    except RuleViolation as error:
        context["breakdown_error"] = str(error)
    context["breakdown_csv_url"] = (
        f"{reverse('billing:tenant-cost-csv', args=[tenant.slug])}?{csv_query}")
    return context


def spend_page_card(request, tenant: Tenant) -> dict:
    """The spend page's card: `?by=` and `?month=` (or `start`/`end`), this month by default."""
    form = CostBreakdownForm(request.GET)
    if not form.is_valid():
        return {"breakdown": None, "breakdown_choices": By.CHOICES, "breakdown_month_form": True,
                "breakdown_query": _query_without(request, "by"),
                "breakdown_error": " ".join(m for ms in form.errors.values() for m in ms)}
    data = form.cleaned_data
    start, end = data["period"]
    csv_query = f"by={data['by']}&start={start:%Y-%m}&end={end - timedelta(days=1):%Y-%m}"
    return _card(tenant, by=data["by"], period=data["period"], csv_query=csv_query) | {
        "breakdown_month_form": True, "breakdown_query": _query_without(request, "by")}


def explorer_card(request, usage: UsageFilter) -> dict:
    """The explorer's card, for the one tenant it is filtered on (the months its days span);
    none while it shows every tenant."""
    if not usage.tenant_slug:
        return {}
    tenant = tenants_visible_to(request.user).filter(slug=usage.tenant_slug).first()
    if tenant is None:
        return {}
    by = request.GET.get("by") if request.GET.get("by") in By.COLUMN else By.WORKLOAD
    first: date = usage.start.date()
    last: date = (usage.end - timedelta(seconds=1)).date()
    query = {"breakdown_query": _query_without(request, "by", "page")}
    try:
        period = month_range(first, last)
    except RuleViolation as error:
        return {"breakdown": None, "breakdown_error": str(error),
                "breakdown_choices": By.CHOICES} | query
    csv_query = f"by={by}&start={first:%Y-%m}&end={last:%Y-%m}"
    return _card(tenant, by=by, period=period, csv_query=csv_query) | query


@login_required
def cost_csv(request, slug: str) -> HttpResponse:
    """The breakdown as CSV (audited), with the spend page's parameters."""
    tenant = tenant_get_for_user(user=request.user, slug=slug)
    form = CostBreakdownForm(request.GET)
    if not form.is_valid():
        message = " ".join(m for ms in form.errors.values() for m in ms)
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    start, end = form.cleaned_data["period"]
    result = cost_breakdown(tenant=tenant, by=form.cleaned_data["by"], start=start, end=end)
    cost_export_record(actor=request.user, what="cost_breakdown", tenant=tenant,
                       changes={"by": result.by, "start": f"{start:%Y-%m}",
                                "end": f"{end:%Y-%m}", "format": "csv"})
    return breakdown_csv(result)


@require_GET
@finance_required
def focus_csv_download(request) -> HttpResponse:
    """The invoice list's FOCUS button: a month's billed usage as FOCUS 1.2 CSV (audited)."""
    form = FocusMonthForm(request.GET)
    if not form.is_valid():
        messages.error(request, "FOCUS export: " + " ".join(
            m for ms in form.errors.values() for m in ms))
        return redirect("billing:invoices")
    month = form.cleaned_data["month"]
    return focus_response(focus_export(actor=request.user, month=month), month)
