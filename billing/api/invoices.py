"""The invoices API: scoped like the pages, moved only by finance, exported in three formats.

Finance and platform admins see every invoice; a tenant's members see their tenants' issued
(paid, void) invoices and never a draft. Another tenant's invoice is not found (404) on every
path; a member who may see one but asks to move it gets 403. Bad input is a 400 with field
errors; a move the invoice's state does not allow is a 409. Nothing changes an issued invoice:
there is no PUT, PATCH or DELETE.
"""

from datetime import UTC, datetime, time

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.scopes import Scope
from core.errors import RuleViolation
from tenants.access import access_for

from ..downloads import CONTENT_TYPES, invoice_file, invoices_file
from ..filters import InvoiceFilterSet
from ..models import Invoice
from ..selectors.finance import invoice_for_detail, invoices_for_list
from ..selectors.invoices import invoice_for_download, invoice_get_for_user
from ..serializers import (
    CreditNoteCreateSerializer,
    CreditNoteSerializer,
    InvoiceDetailSerializer,
    InvoiceIssueSerializer,
    InvoicePaymentSerializer,
    InvoiceSerializer,
    InvoiceVoidSerializer,
)
from ..services import invoice_exports, invoicing, payments
from ..services.exports import invoices_export_record


def _renderer(fmt: str) -> type[BaseRenderer]:
    """A renderer that only lets a file's media type be negotiated (the view writes the file)."""

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return data if isinstance(data, bytes) else b""

    media_type = CONTENT_TYPES[fmt].split(";")[0]
    return type(f"{fmt.title()}FileRenderer", (BaseRenderer,),
                {"media_type": media_type, "format": fmt, "render": render})


RENDERERS = {fmt: _renderer(fmt) for fmt in CONTENT_TYPES}


def _file_response(fmt: str, what: str) -> dict:
    media_type = CONTENT_TYPES[fmt].split(";")[0]
    return {(200, media_type): OpenApiResponse(OpenApiTypes.BINARY, description=what)}


def _list_file_response(fmt: str, what: str) -> dict:
    return {**_file_response(fmt, what), 400: OpenApiResponse(
        description="A filter that cannot be applied, or more invoices than are written while "
                    "one waits (billing/invoice-exports/ writes any number in the background).")}


class FileViewMixin:
    """A download: JSON errors, also where the answer would have been a file."""

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


def _require_finance(request: Request, what: str) -> None:
    if not access_for(request.user).sees_all_tenants:
        raise PermissionDenied(f"Only finance staff {what}.")


def _paid_at(data: dict) -> datetime | None:
    """When the whole balance was paid: `paid_at`, else noon UTC of `paid_on`, else now."""
    if data.get("paid_at") is not None:
        return data["paid_at"]
    if data.get("paid_on") is not None and data["paid_on"] != timezone.localdate():
        return datetime.combine(data["paid_on"], time(12), tzinfo=UTC)
    return None


class InvoiceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Monthly invoices per tenant: drafts (finance only), issued, paid, void. Finance issues,
    records payments, voids and credits them; nobody edits one."""

    read_scope = Scope.BILLING_READ

    serializer_class = InvoiceSerializer
    filterset_class = InvoiceFilterSet
    queryset = Invoice.objects.none()

    def get_queryset(self) -> QuerySet[Invoice]:
        if getattr(self, "swagger_fake_view", False):
            return Invoice.objects.none()
        return invoices_for_list(user=self.request.user)

    def get_serializer_class(self):
        return InvoiceDetailSerializer if self.action == "retrieve" else InvoiceSerializer

    def _detail(self, pk, *, code: int = status.HTTP_200_OK) -> Response:
        invoice = invoice_for_detail(user=self.request.user, invoice_id=int(pk))
        context = self.get_serializer_context()
        return Response(InvoiceDetailSerializer(invoice, context=context).data, status=code)

    def _for_finance(self, pk, what: str) -> Invoice:
        """The invoice (404 first: another tenant's is not there), if the caller is finance."""
        invoice = invoice_get_for_user(user=self.request.user, invoice_id=int(pk))
        _require_finance(self.request, what)
        return invoice

    @extend_schema(responses=InvoiceDetailSerializer)
    def retrieve(self, request: Request, pk: str) -> Response:
        """One invoice with its lines (usage and downtime credit), unpriced usage and credit
        notes."""
        return self._detail(pk)

    @extend_schema(
        request=InvoiceIssueSerializer,
        responses=InvoiceDetailSerializer,
        examples=[
            OpenApiExample("Issue today", value={}, request_only=True),
            OpenApiExample("Issue on a date", value={"issue_date": "2026-02-02"},
                           request_only=True),
        ],
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def issue(self, request: Request, pk: str) -> Response:
        """Issue a draft: recomputed, numbered INV-<year>-<0001>, dated, due after the payment
        terms, immutable from then on (finance). Not a draft: 409; usage without a price, a
        month not ended, hours never metered without `unmetered_reason`, or a total other
        than `expected_total`: 400. The call itself is the confirmation (docs/billing.md)."""
        invoice = self._for_finance(pk, "issue invoices")
        body = InvoiceIssueSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        invoicing.invoice_issue(invoice_id=invoice.pk, actor=request.user,
                                issue_date=body.validated_data.get("issue_date"),
                                unmetered_reason=body.validated_data["unmetered_reason"],
                                expected_total=body.validated_data.get("expected_total"))
        return self._detail(pk)

    @extend_schema(
        request=InvoicePaymentSerializer,
        responses=InvoiceDetailSerializer,
        examples=[OpenApiExample("Paid by transfer",
                                 value={"reference": "SEPA 2026-03-04 ACME"},
                                 request_only=True)],
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def pay(self, request: Request, pk: str) -> Response:
        """Record a payment of an issued invoice (finance): `amount` (default: the whole
        balance due), the day and a reference. A partial payment leaves it issued with the
        rest due; once payments and credit notes cover its total it is paid. More than the
        balance due: 400. Not issued: 409."""
        invoice = self._for_finance(pk, "record payments")
        body = InvoicePaymentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if "amount" not in data:
            invoicing.invoice_mark_paid(invoice_id=invoice.pk, actor=request.user,
                                        paid_at=_paid_at(data), reference=data["reference"])
            return self._detail(pk)
        paid_on = data.get("paid_on")
        if paid_on is None and data.get("paid_at") is not None:
            paid_on = timezone.localdate(data["paid_at"])
        payments.payment_record(invoice_id=invoice.pk, actor=request.user,
                                amount=data["amount"], paid_on=paid_on,
                                reference=data["reference"])
        return self._detail(pk)

    @extend_schema(
        request=InvoiceVoidSerializer,
        responses=InvoiceDetailSerializer,
        examples=[OpenApiExample("Billed to the wrong tenant",
                                 value={"reason": "Billed to the wrong tenant; reissued."},
                                 request_only=True)],
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def void(self, request: Request, pk: str) -> Response:
        """Void an issued invoice, with the reason (finance); it stays on record. Not issued:
        409."""
        invoice = self._for_finance(pk, "void invoices")
        body = InvoiceVoidSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        invoicing.invoice_void(invoice_id=invoice.pk, actor=request.user,
                               reason=body.validated_data["reason"])
        return self._detail(pk)

    @extend_schema(
        request=CreditNoteCreateSerializer,
        responses={201: CreditNoteSerializer},
        examples=[OpenApiExample("A day of downtime", value={
            "amount": "12.50", "reason": "A day's outage not covered by the downtime credit."},
            request_only=True)],
    )
    @action(detail=True, methods=["post"], url_path="credit-notes", filter_backends=[])
    def credit_notes(self, request: Request, pk: str) -> Response:
        """Credit part of an issued or paid invoice, numbered CN-<year>-<0001> (finance); the
        invoice itself never changes. More than what is left: 400."""
        invoice = self._for_finance(pk, "issue credit notes")
        body = CreditNoteCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        note = invoicing.credit_note_create(invoice_id=invoice.pk, actor=request.user,
                                            **body.validated_data)
        return Response(CreditNoteSerializer(note).data, status=status.HTTP_201_CREATED)


class InvoiceExportView(FileViewMixin, APIView):
    """One invoice as a file (every download is audited)."""

    read_scope = Scope.BILLING_READ

    fmt = "csv"

    def get(self, request: Request, pk: int) -> Response:
        invoice = invoice_for_download(user=request.user, invoice_id=int(pk), fmt=self.fmt)
        response = invoice_file(invoice=invoice, fmt=self.fmt)
        invoices_export_record(actor=request.user, fmt=self.fmt, invoice=invoice)
        return response


class InvoiceCsvView(InvoiceExportView):
    fmt = "csv"
    renderer_classes = [JSONRenderer, RENDERERS["csv"]]

    @extend_schema(responses=_file_response("csv", "The invoice's lines, one row each."),
                   operation_id="billing_invoice_export_csv")
    def get(self, request: Request, pk: int) -> Response:
        """The invoice as CSV: one row per line, ISO dates, formula-safe cells."""
        return super().get(request, pk)


class InvoiceXlsxView(InvoiceExportView):
    fmt = "xlsx"
    renderer_classes = [JSONRenderer, RENDERERS["xlsx"]]

    @extend_schema(responses=_file_response("xlsx", "A workbook: summary and invoice sheets."),
                   operation_id="billing_invoice_export_xlsx")
    def get(self, request: Request, pk: int) -> Response:
        """The invoice as an XLSX workbook with number and date cells."""
        return super().get(request, pk)


class InvoicePdfView(InvoiceExportView):
    fmt = "pdf"
    renderer_classes = [JSONRenderer, RENDERERS["pdf"]]

    @extend_schema(responses=_file_response("pdf", "The invoice document."),
                   operation_id="billing_invoice_export_pdf")
    def get(self, request: Request, pk: int) -> Response:
        """The invoice as a PDF document."""
        return super().get(request, pk)


class InvoiceListExportView(FileViewMixin, APIView):
    """The invoices the filters select (like the list's), as one file; audited."""

    read_scope = Scope.BILLING_READ

    fmt = "csv"
    filterset_class = InvoiceFilterSet
    filter_backends = [DjangoFilterBackend]
    queryset = Invoice.objects.none()  # for the schema: the filters' model

    def get(self, request: Request) -> Response:
        # An unreadable filter is a 400 (the backend raises it), never everything exported.
        invoices = DjangoFilterBackend().filter_queryset(
            request, invoices_for_list(user=request.user), self
        )
        count = invoices.count()
        filters = invoice_exports.export_filters(request.query_params)
        if not invoice_exports.is_inline(fmt=self.fmt, invoice_count=count):
            # Longer than a request may take to write: asked for in the background instead.
            exports_url = request.build_absolute_uri(reverse("api:invoice-export-list"))
            raise RuleViolation(
                f"{count:,} invoices are more than the {invoice_exports.inline_limit(self.fmt):,}"
                f" written while you wait: POST the filters to {exports_url} to have them "
                "written in the background."
            )
        invoices_export_record(actor=request.user, fmt=self.fmt, invoice_count=count,
                               filters=filters)
        return invoices_file(invoices=invoices, fmt=self.fmt)


class InvoiceListCsvView(InvoiceListExportView):
    fmt = "csv"
    renderer_classes = [JSONRenderer, RENDERERS["csv"]]

    @extend_schema(filters=True, responses=_list_file_response(
        "csv", "Every selected invoice's lines, one row each (streamed)."),
        operation_id="billing_invoices_export_csv")
    def get(self, request: Request) -> Response:
        """The selected invoices as CSV, one row per line."""
        return super().get(request)


class InvoiceListXlsxView(InvoiceListExportView):
    fmt = "xlsx"
    renderer_classes = [JSONRenderer, RENDERERS["xlsx"]]

    @extend_schema(filters=True, responses=_list_file_response(
        "xlsx", "An Invoices sheet (a row per invoice) and a Lines sheet (a row per line)."),
        operation_id="billing_invoices_export_xlsx")
    def get(self, request: Request) -> Response:
        """The selected invoices as an XLSX workbook."""
        return super().get(request)
