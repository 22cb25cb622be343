"""The usage explorer (finance and platform admins) and the rate card (everyone signed in)."""

import io
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone

from core import csv_export
from tenants.access import access_for
from tenants.workloads.selectors import idle_reclaimed

from ..calculations.invoicing import class_label
from ..selectors.explorer import (
    UsageFilter,
    cost_center_choices,
    gpu_usage_by_tenant_and_class,
    usage_explorer,
    usage_rows,
)
from ..selectors.explorer.filters import tenant_filter
from ..selectors.rates import rate_card
from ..selectors.tenant_filter import tenant_choice
from ..usage_filters import UsageFilterForm
from .cost import explorer_card

CSV_COLUMNS = [
    "tenant", "tenant_name", "cost_center", "resource_class", "resource_label",
    "period_start", "period_end", "unit", "unit_hours", "gpu_hours",
]


def _filter_errors(form: UsageFilterForm) -> list[str]:
    return [
        f"{form.fields[name].label if name in form.fields else name}: {message}"
        for name, messages in form.errors.items()
        for message in messages
    ]


def _query_without(request, *names: str) -> str:
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    return query.urlencode()


def _usage_csv(usage: UsageFilter) -> HttpResponse:
    """The explorer's table, every row (not one page), through the formula-safe writer."""
    out = io.StringIO()
    writer = csv_export.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    last_day = usage.days[-1]
    for row in usage_rows(gpu_usage_by_tenant_and_class(usage)):
        writer.writerow([
            row.tenant_slug, row.tenant_name, row.cost_center, row.resource, row.label,
            usage.start.date().isoformat(), last_day.isoformat(), row.unit, row.unit_hours,
            "" if row.gpu_hours is None else row.gpu_hours,
        ])
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    name = f"gpu-usage-{usage.start:%Y-%m-%d}-{last_day:%Y-%m-%d}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
def usage(request):
    access = access_for(request.user)
    if not (access.finance or access.platform_admin):
        raise PermissionDenied
    form = UsageFilterForm(request.GET)
    context = {
        "form": form,
        # The tenant is a slug typed in, not a select of every tenant (thousands of them).
        "tenant_choice": tenant_choice(request.GET.get("tenant")),
        "tenant_query": _query_without(request, "page", "format", "tenant"),
    }
    if not form.is_valid():
        context["cost_centers"] = cost_center_choices()
        # A filter that cannot be applied shows nothing rather than everything as if it had.
        context["filter_errors"] = _filter_errors(form)
        return render(request, "billing/usage/explorer.html", context, status=400)
    usage_filter = form.usage_filter(tenant_ids=None)
    if request.GET.get("format") == "csv":
        return _usage_csv(usage_filter)

    # Cached under the range's usage stamp: a repeat view between writes is one query.
    explorer = usage_explorer(usage_filter, page=request.GET.get("page"), now=timezone.now())
    summary = explorer.summary
    context |= {
        "usage": usage_filter,
        "last_day": usage_filter.days[-1],
        "page": explorer.page,
        "rows": explorer.page.object_list,
        "query": _query_without(request, "page", "format"),
        "chart": summary.chart,
        "chart_json": summary.chart_data,
        "utilization": summary.utilization,
        "utilization_json": summary.utilization_data,
        "fleet": summary.fleet,
        "health": explorer.health,
        "cost_centers": summary.cost_centers,
        "by_cluster": summary.by_cluster,
        # What tenants' idle GPU policies gave back in the range (tenants' own selector).
        "reclaimed": idle_reclaimed(start=usage_filter.start, end=usage_filter.end,
                                    now=timezone.now(),
                                    where=tenant_filter(usage_filter, "workload__")),
        "currency": settings.BILLING_CURRENCY,
        # One tenant's cost by workload, person or label (none while every tenant shows).
        **explorer_card(request, usage_filter),
    }
    return render(request, "billing/usage/explorer.html", context)


def _price(value: Decimal) -> str:
    """A price with its cents, and further places only where it has them: 2.50, 0.0125."""
    text = f"{value.normalize():f}"
    whole, _, places = text.partition(".")
    return f"{whole}.{places.ljust(2, '0')}"


UNIT_NAMES = {"cpu": "vCPU", "memory-gib": "GiB", "storage-gib": "GiB", "gpu": "GPU",
              "mig": "MIG instance", "count": "workload"}


def _per(resource: str, unit: str) -> str:
    """What the price is for, as a person says it: per GPU-hour, per GiB-month, …"""
    kind = resource.partition(":")[0]
    if kind == "hami":
        name = "GiB of GPU memory" if resource.endswith(":memory-gib") else "% of a GPU"
        return f"per {name} per {unit}"
    return f"per {UNIT_NAMES.get(resource, UNIT_NAMES.get(kind, 'unit'))}-{unit}"


@login_required
def rates(request):
    """The rate card in force now, and the prices already scheduled to follow."""
    now = timezone.now()
    card = rate_card(start=now)
    current = [rate for rate in card if rate.covers(now)]
    scheduled = [rate for rate in card if rate.valid_from > now]

    def rows(rates_):
        return [
            {"rate": rate, "label": class_label(rate.resource), "price": _price(rate.unit_price),
             "unit": _per(rate.resource, rate.unit),
             "kind": rate.resource.partition(":")[0] if ":" in rate.resource else "scalar"}
            for rate in rates_
        ]

    return render(
        request,
        "billing/usage/rates.html",
        {"current": rows(current), "scheduled": rows(scheduled), "now": now,
         "currency": settings.BILLING_CURRENCY},
    )
