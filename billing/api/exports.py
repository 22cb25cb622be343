"""Invoice list exports written in the background, over the API: ask for one (the filters of the
invoice list, a format), follow its status, download it once written. Each caller sees only the
exports they asked for (anyone else's is a 404); what one holds is read with the caller's
access when it is written (see `billing.services.invoice_exports`)."""

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import QuerySet
from django.http import Http404, QueryDict
from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.scopes import Scope
from core.errors import Conflict

from ..downloads import attachment
from ..filters import InvoiceFilterSet, filter_errors
from ..models import ExportStatus, InvoiceExport
from ..selectors.finance import invoices_for_list
from ..serializers import InvoiceExportCreateSerializer, InvoiceExportSerializer
from ..services.invoice_exports import invoice_export_for_user, invoice_export_request
from .invoices import RENDERERS, FileViewMixin


def selected_invoices(*, user, filters: dict[str, list[str]]):
    """The invoices `filters` select for `user`, as the list's; a filter that cannot be
    applied is a 400 with what is wrong."""
    query = QueryDict(mutable=True)
    for key, values in filters.items():
        query.setlist(key, values)
    filterset = InvoiceFilterSet(query, queryset=invoices_for_list(user=user))
    errors = filter_errors(filterset, query, ignore=())
    if errors:
        raise serializers.ValidationError({"filters": errors})
    return filterset.qs


class InvoiceExportViewSet(
    FileViewMixin, mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Exports of invoice lists of any length, written in the background."""

    read_scope = Scope.BILLING_READ
    # An export is a read of invoices, asked for with a POST.
    action_scopes = {"create": Scope.BILLING_READ}

    serializer_class = InvoiceExportSerializer
    queryset = InvoiceExport.objects.none()
    filter_backends: list = []

    def get_queryset(self) -> QuerySet[InvoiceExport]:
        if getattr(self, "swagger_fake_view", False):
            return InvoiceExport.objects.none()
        return InvoiceExport.objects.filter(requested_by=self.request.user).defer("body")

    @extend_schema(
        request=InvoiceExportCreateSerializer,
        responses={202: InvoiceExportSerializer},
        examples=[OpenApiExample("Every issued invoice of October 2026", request_only=True,
                                 value={"format": "xlsx",
                                        "filters": {"period": ["2026-10"],
                                                    "status": ["issued"]}})],
    )
    def create(self, request: Request) -> Response:
        """Ask for the invoices the filters select (as the invoice list's) as CSV or XLSX: 202,
        and the export, queued; follow it until its status is ready, then fetch its file_url.
        A filter that cannot be applied: 400."""
        body = InvoiceExportCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        filters = body.validated_data["filters"]
        invoices = selected_invoices(user=request.user, filters=filters)
        export = invoice_export_request(
            actor=request.user, fmt=body.validated_data["format"], filters=filters,
            invoice_count=invoices.count(),
        )
        data = InvoiceExportSerializer(export, context=self.get_serializer_context()).data
        location = request.build_absolute_uri(
            reverse("api:invoice-export-detail", args=[export.pk])
        )
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": location})

    @extend_schema(
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                description="The export's CSV or XLSX file."),
            409: OpenApiResponse(description="Not written (yet): its status says why."),
        },
    )
    @action(detail=True, methods=["get"], url_path="file", url_name="file",
            renderer_classes=[JSONRenderer, RENDERERS["csv"], RENDERERS["xlsx"]])
    def file(self, request: Request, pk: str) -> Response:
        """The export's file, once its status is ready; before that (or once failed): 409."""
        try:
            export = invoice_export_for_user(user=request.user, export_id=int(pk))
        except (ObjectDoesNotExist, ValueError):
            raise Http404 from None
        if export.status != ExportStatus.READY:
            reason = f": {export.error}" if export.error else "."
            raise Conflict(f"Export {export.pk} is {export.get_status_display().lower()}, "
                           f"not ready{reason}")
        body = InvoiceExport.objects.filter(pk=export.pk).values_list("body", flat=True).get()
        return attachment(bytes(body), fmt=export.fmt, filename=export.filename)

