"""Billing endpoints under /api/v1/."""

urlpatterns: list = []

# Invoices (finance's moves, exports) and the rate card (branch `fin`).
from django.urls import path  # noqa: E402

from portal.api.routers import PortalRouter  # noqa: E402

from . import invoices, rates  # noqa: E402

router = PortalRouter()
router.register("billing/invoices", invoices.InvoiceViewSet, basename="invoice")
router.register("billing/rates", rates.RateViewSet, basename="rate")
urlpatterns += [
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
