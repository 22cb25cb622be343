"""A month's billed usage in the FinOps FOCUS format (FinOps Open Cost and Usage Specification,
version 1.2: the Cost and Usage dataset's columns), for finance's own tools (issue 35, part 5).

Billed usage is what the month's issued (and paid) invoices bill; drafts are not billed yet and
void invoices bill nothing. Each invoice line becomes a row per workload that held it (its
share of the line and of the discount, shared out to the cent as the cost breakdown shares them,
`calculations.breakdown.line_pieces`), a downtime credit a `Credit` row, the tax a `Tax` row;
so BilledCost adds up to each invoice's total (per InvoiceId), as FOCUS requires. Credit notes,
issued later as corrections, are not in it.

The columns: all 21 of FOCUS 1.2's mandatory ones, the conditional and recommended ones the
portal has a value for (ChargeFrequency, ConsumedQuantity/Unit, InvoiceId, ListUnitPrice,
PricingCategory, ResourceId/Name/Type, SkuId, Tags), and custom ones prefixed `x_` as the
specification asks. Nulls are empty cells; date/times ISO 8601 in UTC with `Z`; numbers plain.

Reads only, in five queries whatever the month holds: the invoices, their lines, the usage
grouped per tenant, workload, class and rate period, and the workloads named.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Prefetch

from core import csv_export
from tenants.workloads.models import Workload

from ..calculations.breakdown import CREDIT, UNATTRIBUTED, BilledLine, line_pieces
from ..calculations.invoicing import quantity_unit
from ..calculations.money import next_month
from ..models import Invoice, InvoiceLine, InvoiceStatus
from .cost_breakdown import By, grouped_usage
from .exports import cost_export_record

FOCUS_VERSION = "1.2"
COLUMNS = [
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass",
    "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart",
    "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "EffectiveCost", "InvoiceId",
    "InvoiceIssuerName", "ListCost", "ListUnitPrice", "PricingCategory", "PricingQuantity",
    "PricingUnit", "ProviderName", "PublisherName", "ResourceId", "ResourceName",
    "ResourceType", "ServiceCategory", "ServiceName", "SkuId", "Tags",
    "x_CostCenter", "x_InvoiceLine", "x_WorkloadLabel", "x_LaunchedBy",
]
BILLED = (InvoiceStatus.ISSUED, InvoiceStatus.PAID)
# The FOCUS service category of each workload kind (an allowed value of the specification).
CATEGORIES = {"inference": "AI and Machine Learning", "notebook": "AI and Machine Learning"}
FLEET = "GPU fleet"
QUANTITY = Decimal("0.000001")


def _when(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _unit(resource: str, unit: str) -> str:
    """FOCUS's unit format: "GPU-Hours", "GiB-Months" (title-cased words, as its examples)."""
    return "-".join(word[:1].upper() + word[1:] for word in quantity_unit(resource, unit)
                    .split("-"))


def _invoices(month: datetime) -> list[Invoice]:
    return list(
        Invoice.objects.filter(period_start=month, status__in=BILLED)
        .select_related("tenant")
        .prefetch_related(Prefetch("lines", queryset=InvoiceLine.objects.order_by("position")))
        .order_by("tenant_name", "pk")
    )


def _workloads(ids: set) -> dict[int, dict[str, Any]]:
    return {
        row["pk"]: row
        for row in Workload.objects.filter(pk__in=[i for i in ids if isinstance(i, int)])
        .values("pk", "name", "kind", "label", "launched_by__username")
    }


def _base(invoice: Invoice) -> dict[str, Any]:
    provider = settings.BILLING_PROVIDER_NAME
    return {
        "BillingAccountId": invoice.tenant.slug,
        "BillingAccountName": invoice.tenant_name,
        "BillingCurrency": invoice.currency,
        "BillingPeriodStart": _when(invoice.period_start),
        "BillingPeriodEnd": _when(invoice.period_end),
        "ChargeClass": None,
        "InvoiceId": invoice.number,
        "InvoiceIssuerName": provider,
        "ProviderName": provider,
        "PublisherName": provider,
        "x_CostCenter": invoice.cost_center or None,
    }


def _workload_columns(key, workloads: dict[int, dict[str, Any]]) -> dict[str, Any]:
    workload = workloads.get(key) if key not in (UNATTRIBUTED, CREDIT) else None
    if workload is None:
        return {"ResourceId": None, "ResourceName": None, "ResourceType": None, "Tags": None,
                "ServiceName": FLEET, "ServiceCategory": "Compute", "x_WorkloadLabel": None,
                "x_LaunchedBy": None}
    kind_label = Workload(kind=workload["kind"]).kind_label
    tags = {name: value for name, value in (("label", workload["label"]),
                                            ("launched_by", workload["launched_by__username"]))
            if value}
    return {
        "ResourceId": f"workload-{workload['pk']}",
        "ResourceName": workload["name"],
        "ResourceType": kind_label,
        "Tags": json.dumps(tags, sort_keys=True) if tags else None,
        "ServiceName": kind_label,
        "ServiceCategory": CATEGORIES.get(workload["kind"], "Compute"),
        "x_WorkloadLabel": workload["label"] or None,
        "x_LaunchedBy": workload["launched_by__username"],
    }


def _line_row(invoice: Invoice, line: InvoiceLine, piece, workloads) -> dict[str, Any]:
    billed = piece.amount + piece.discount
    usage = line.kind == InvoiceLine.Kind.USAGE
    # A credit, or a usage line no workload's usage explains (it is unattributed whole), is
    # the whole line: its quantity keeps ListCost = ListUnitPrice * PricingQuantity.
    whole = not usage or (piece.key is UNATTRIBUTED and not piece.unit_seconds)
    seconds = line.unit_seconds if whole else piece.unit_seconds
    share = Decimal(seconds) / line.unit_seconds if line.unit_seconds else Decimal(0)
    columns = _workload_columns(piece.key, workloads)
    name = columns["ResourceName"]
    return _base(invoice) | columns | {
        "BilledCost": billed,
        "ChargeCategory": "Usage" if usage else "Credit",
        "ChargeDescription": (f"{line.description}, {name}" if name else line.description),
        "ChargeFrequency": "Usage-Based",
        "ChargePeriodStart": _when(line.period_start),
        "ChargePeriodEnd": _when(line.period_end),
        "ConsumedQuantity": (Decimal(seconds) / 3600).quantize(QUANTITY) if usage else None,
        "ConsumedUnit": _unit(line.resource, "hour") if usage else None,
        "ContractedCost": billed,
        "EffectiveCost": billed,
        "ListCost": piece.amount,
        "ListUnitPrice": line.unit_price,
        "PricingCategory": "Standard",
        "PricingQuantity": (line.quantity * share).quantize(QUANTITY),
        "PricingUnit": _unit(line.resource, line.unit),
        "SkuId": line.resource,
        "x_InvoiceLine": line.position,
    }


def _tax_row(invoice: Invoice) -> dict[str, Any]:
    return _base(invoice) | _workload_columns(UNATTRIBUTED, {}) | {
        "BilledCost": invoice.tax,
        "ChargeCategory": "Tax",
        "ChargeDescription": f"Tax, {invoice.tax_percent.normalize():f} %",
        "ChargeFrequency": "Recurring",
        "ChargePeriodStart": _when(invoice.period_start),
        "ChargePeriodEnd": _when(invoice.period_end),
        "ConsumedQuantity": None, "ConsumedUnit": None,
        "ContractedCost": invoice.tax, "EffectiveCost": invoice.tax, "ListCost": invoice.tax,
        "ListUnitPrice": None, "PricingCategory": None, "PricingQuantity": None,
        "PricingUnit": None, "SkuId": None, "x_InvoiceLine": None,
    }


def focus_rows(*, month: date) -> Iterator[dict[str, Any]]:
    """The month's billed usage as FOCUS rows (column → value, None for null)."""
    start = datetime(month.year, month.month, 1, tzinfo=UTC)
    invoices = _invoices(start)
    usage = grouped_usage(tenant_ids=[invoice.tenant_id for invoice in invoices],
                          by=By.WORKLOAD, start=start, end=next_month(start)) if invoices else {}
    workloads = _workloads({item.key for rows in usage.values() for item in rows})
    for invoice in invoices:
        lines = list(invoice.lines.all())
        pieces = line_pieces(
            lines=[BilledLine(line.kind, line.resource, line.period_start.astimezone(UTC),
                              line.amount) for line in lines],
            usage=usage.get((invoice.tenant_id, start), []), discount=invoice.discount,
        )
        for piece in pieces:
            yield _line_row(invoice, lines[piece.line], piece, workloads)
        if invoice.tax or invoice.tax_percent is not None:
            yield _tax_row(invoice)


def _cell(value: Any) -> Any:
    if value is None:
        return ""  # FOCUS's null, in CSV
    if isinstance(value, Decimal):
        return f"{value:f}"
    return value


def focus_csv(*, month: date) -> str:
    """The month's FOCUS rows as CSV text (formula-safe cells: names are people's text)."""
    out = io.StringIO()
    writer = csv_export.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in focus_rows(month=month):
        writer.writerow([_cell(row[column]) for column in COLUMNS])
    return out.getvalue()


def focus_export(*, actor, month: date) -> str:
    """The month's FOCUS CSV for `actor` (finance), its export audited."""
    text = focus_csv(month=month)
    cost_export_record(actor=actor, what="focus", changes={
        "month": f"{month:%Y-%m}", "focus_version": FOCUS_VERSION,
        "rows": text.count("\n") - 1})
    return text
