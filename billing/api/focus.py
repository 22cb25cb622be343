"""A month's billed usage as a FinOps FOCUS 1.2 CSV (finance and platform admins): the issued
invoices' lines per workload, BilledCost adding up to each invoice's total
(`services.focus_export`). Anyone else: 403."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..cost_filters import FocusMonthForm, focus_response
from ..services.focus_export import FOCUS_VERSION, focus_export
from .invoices import RENDERERS, FileViewMixin, _require_finance


class FocusCsvView(FileViewMixin, APIView):
    """A month's billed usage in the FinOps FOCUS format (version 1.2), for finance's tools."""

    read_scope = "billing:read"
    renderer_classes = [JSONRenderer, RENDERERS["csv"]]

    @extend_schema(
        parameters=[OpenApiParameter(
            "month", OpenApiTypes.STR, description="The invoices' month, YYYY-MM (default: "
            "last month).", examples=[OpenApiExample("November 2026", value="2026-11")])],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.BINARY, description=f"FOCUS {FOCUS_VERSION} columns, a row per "
                "invoice line and workload (Usage), downtime credit (Credit) and tax (Tax) of "
                "the month's issued and paid invoices; BilledCost adds up to their totals."),
            403: OpenApiResponse(description="Only finance staff and platform admins."),
        },
        operation_id="billing_invoices_focus_csv",
    )
    def get(self, request: Request) -> Response:
        _require_finance(request, "export FOCUS data")
        form = FocusMonthForm(request.query_params)
        if not form.is_valid():
            raise ValidationError({name: [str(m) for m in messages]
                                   for name, messages in form.errors.items()})
        month = form.cleaned_data["month"]
        return focus_response(focus_export(actor=request.user, month=month), month)
