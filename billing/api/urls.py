"""Billing endpoints under /api/v1/."""

from django.urls import path

from portal.api.routers import PortalRouter

from . import invoices, rates

router = PortalRouter()
router.register("billing/invoices", invoices.InvoiceViewSet, basename="invoice")
router.register("billing/rates", rates.RateViewSet, basename="rate")

urlpatterns = [
    path("billing/invoices/export.csv", invoices.InvoiceListCsvView.as_view(),
         name="invoices-export-csv"),
    path("billing/invoices/export.xlsx", invoices.InvoiceListXlsxView.as_view(),
         name="invoices-export-xlsx"),
    path("billing/invoices/<int:pk>/export.csv", invoices.InvoiceCsvView.as_view(),
         name="invoice-export-csv"),
    path("billing/invoices/<int:pk>/export.xlsx", invoices.InvoiceXlsxView.as_view(),
         name="invoice-export-xlsx"),
    path("billing/invoices/<int:pk>/export.pdf", invoices.InvoicePdfView.as_view(),
         name="invoice-export-pdf"),
    *router.urls,
]
