"""The roll-up of invoices by cost center and month: a table, a stacked chart, a CSV export.
Issued and paid invoices count by default (drafts may still change; void ones are not owed)."""

import io

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from core import csv_export

from ..downloads import attachment
from ..filters import InvoiceFilterSet, filter_errors
from ..models import InvoiceStatus
from ..selectors.finance import cost_center_rollup, invoice_filter_choices, invoices_for_list
from ..services.exports import invoices_export_record
from .access import finance_required
from .finance import query_without

ROLLUP_COLUMNS = ("cost_center", "month", "invoices", "subtotal", "total", "credited",
                  "net_total", "paid", "outstanding", "over_settled")


@require_GET
@finance_required
def cost_center_list(request):
    query = request.GET.copy()
    if not request.GET.getlist("status"):
        # By default what was billed: issued and paid (drafts may still change, void are not).
        query.setlist("status", [InvoiceStatus.ISSUED, InvoiceStatus.PAID])
    filters = InvoiceFilterSet(query, queryset=invoices_for_list(user=request.user))
    errors = filter_errors(filters, query, ignore=("format",))
    rows = [] if errors else cost_center_rollup(invoices=filters.qs)
    if request.GET.get("format") == "csv" and not errors:
        return _rollup_csv(request, rows)
    months = sorted({row.month for row in rows})
    centers = sorted({row.cost_center for row in rows})
    by_key = {(row.cost_center, row.month): row.total for row in rows}
    chart = {
        "currency": settings.BILLING_CURRENCY,
        "labels": [f"{month:%Y-%m}" for month in months],
        "datasets": [
            {
                "label": center or "(no cost center)",
                "data": [float(by_key.get((center, month), 0)) for month in months],
            }
            for center in centers
        ],
    }
    totals = {
        "invoices": sum(row.invoices for row in rows),
        "subtotal": sum((row.subtotal for row in rows), start=0),
        "total": sum((row.total for row in rows), start=0),
        "credited": sum((row.credited for row in rows), start=0),
        "net_total": sum((row.net_total for row in rows), start=0),
        "paid": sum((row.paid for row in rows), start=0),
        "outstanding": sum((row.outstanding for row in rows), start=0),
        "over_settled": sum((row.over_settled for row in rows), start=0),
    }
    context = {
        "rows": rows,
        "totals": totals,
        "chart": chart,
        "filters": filters,
        "filter_errors": errors,
        "statuses": InvoiceStatus.choices,
        "selected_statuses": query.getlist("status"),
        "choices": invoice_filter_choices(user=request.user),
        "export_query": query_without(request, "format"),
        "currency": settings.BILLING_CURRENCY,
    }
    return render(request, "billing/finance/cost_centers.html", context,
                  status=400 if errors else 200)


def _rollup_csv(request, rows) -> HttpResponse:
    out = io.StringIO(newline="")
    writer = csv_export.writer(out)
    writer.writerow(ROLLUP_COLUMNS)
    for row in rows:
        money = (row.subtotal, row.total, row.credited, row.net_total, row.paid,
                 row.outstanding, row.over_settled)
        writer.writerow([row.cost_center, f"{row.month:%Y-%m}", row.invoices,
                         *(format(value, "f") for value in money)])
    invoices_export_record(
        actor=request.user, fmt="csv", invoice_count=sum(row.invoices for row in rows),
        filters={"report": ["cost-centers"], **{k: request.GET.getlist(k) for k in request.GET}},
    )
    return attachment(out.getvalue(), fmt="csv", filename=f"cost-centers-{timezone.now():%Y-%m-%d}")
