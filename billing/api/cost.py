"""A tenant's cost by workload, by person or by label over the API, as JSON or CSV: priced as
its invoices are, so the rows add up to the invoices' totals (`services.cost_breakdown`).
Scoped like the spend page: another tenant is a 404; bad input a 400 with field errors."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tenants.access import tenant_get_for_user

from ..cost_filters import CostBreakdownForm, breakdown_csv
from ..services.cost_breakdown import MAX_MONTHS, By, CostBreakdown, cost_breakdown
from ..services.exports import cost_export_record
from .invoices import RENDERERS, FileViewMixin
from .spend import TENANT


class CostRowSerializer(serializers.Serializer):
    key = serializers.CharField(
        help_text="The workload's id, the person's username or the label; empty for the "
        "unattributed and downtime credit rows.")
    name = serializers.CharField()
    detail = serializers.CharField(help_text="The workload's kind, the person's e-mail…")
    kind = serializers.ChoiceField(
        choices=["group", "unattributed", "credit"],
        help_text="group: a workload, person or label; unattributed: usage of none (e.g. "
        "a workload launched by someone since removed); credit: the downtime credit.")
    unit_hours = serializers.DecimalField(max_digits=20, decimal_places=2)
    usage = serializers.DecimalField(max_digits=14, decimal_places=2,
                                     help_text="Its usage at the invoice lines' prices.")
    credit = serializers.DecimalField(max_digits=14, decimal_places=2)
    discount = serializers.DecimalField(max_digits=14, decimal_places=2,
                                        help_text="Its share of the discount (negative).")
    tax = serializers.DecimalField(max_digits=14, decimal_places=2,
                                   help_text="Its share of the tax.")
    total = serializers.DecimalField(max_digits=14, decimal_places=2)
    share_percent = serializers.DecimalField(
        max_digits=4, decimal_places=1, min_value=-100, max_value=100,
        help_text="Its share of what the rows cost before the downtime credit (the sum of "
        "the positive totals), -100.0 to 100.0: the credit's is negative.")


class CostBreakdownSerializer(serializers.Serializer):
    """A tenant's cost over whole months, grouped; `total` equals its invoices' totals."""

    tenant = serializers.CharField(source="tenant.slug")
    by = serializers.ChoiceField(choices=[value for value, _ in By.CHOICES])
    start = serializers.DateTimeField()
    end = serializers.DateTimeField(help_text="Exclusive: the first instant after the range.")
    currency = serializers.CharField()
    total = serializers.DecimalField(max_digits=14, decimal_places=2)
    invoiced_months = serializers.ListField(
        child=serializers.CharField(),
        help_text="Months broken down from their invoice (draft or issued), as billed.")
    computed_months = serializers.ListField(
        child=serializers.CharField(),
        help_text="Months without an invoice yet, computed as their draft would be (this "
        "month: what is metered so far).")
    rows = CostRowSerializer(many=True)


PARAMETERS = [
    TENANT,
    OpenApiParameter("by", OpenApiTypes.STR, enum=[value for value, _ in By.CHOICES],
                     description="Group by workload (default), person (who launched it) or "
                     "label (set at launch)."),
    OpenApiParameter("month", OpenApiTypes.STR, description="A month, YYYY-MM (default: this "
                     "month).", examples=[OpenApiExample("November 2026", value="2026-11")]),
    OpenApiParameter("start", OpenApiTypes.STR, description="Instead of `month`: the first "
                     "month of a range, YYYY-MM."),
    OpenApiParameter("end", OpenApiTypes.STR, description=f"The last month of the range "
                     f"(included), YYYY-MM; at most {MAX_MONTHS} months in all."),
]


def _breakdown(request: Request) -> CostBreakdown:
    form = CostBreakdownForm(request.query_params)
    slug = request.query_params.get("tenant", "")
    errors = {} if form.is_valid() else {
        name: [str(message) for message in messages] for name, messages in form.errors.items()}
    if not slug:
        errors["tenant"] = ["This field is required."]
    if errors:
        raise ValidationError(errors)
    tenant = tenant_get_for_user(user=request.user, slug=slug[:63])
    start, end = form.cleaned_data["period"]
    return cost_breakdown(tenant=tenant, by=form.cleaned_data["by"], start=start, end=end)


class CostBreakdownView(APIView):
    """A tenant's cost by workload, person or label for a month or a range of months, priced
    as its invoices are (discount and tax shared out to the cent); viewers may read it."""

    read_scope = "billing:read"

    @extend_schema(parameters=PARAMETERS, responses=CostBreakdownSerializer)
    def get(self, request: Request) -> Response:
        return Response(CostBreakdownSerializer(_breakdown(request)).data)


class CostBreakdownCsvView(FileViewMixin, APIView):
    """The same breakdown as CSV (formula-safe cells), one row per group."""

    read_scope = "billing:read"
    renderer_classes = [JSONRenderer, RENDERERS["csv"]]

    @extend_schema(parameters=PARAMETERS, responses={
        (200, "text/csv"): OpenApiResponse(OpenApiTypes.BINARY, description="One row per "
                                           "group; the `total` column adds up to the invoices.")
    }, operation_id="billing_spend_breakdown_csv")
    def get(self, request: Request) -> Response:
        result = _breakdown(request)
        cost_export_record(actor=request.user, what="cost_breakdown", tenant=result.tenant,
                           changes={"by": result.by, "start": f"{result.start:%Y-%m}",
                                    "end": f"{result.end:%Y-%m}", "format": "csv"})
        return breakdown_csv(result)
