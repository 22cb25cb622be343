"""Billing endpoints under /api/v1/."""

from django.urls import path

from core.api.routers import PortalRouter

from . import cost, exports, focus, invoices, rates, spend, usage

router = PortalRouter()
router.register("billing/invoices", invoices.InvoiceViewSet, basename="invoice")
router.register("billing/rates", rates.RateViewSet, basename="rate")
router.register("billing/invoice-exports", exports.InvoiceExportViewSet,
                basename="invoice-export")

urlpatterns: list = [
    # A tenant's spend this month and the price of a launch or of resources.
    path("billing/spend/", spend.SpendView.as_view(), name="billing-spend"),
    path("billing/quote/", spend.QuoteView.as_view(), name="billing-quote"),
    # Its cost by workload, person or label, as invoiced (JSON, CSV).
    path("billing/spend/breakdown/", cost.CostBreakdownView.as_view(),
         name="billing-spend-breakdown"),
    path("billing/spend/breakdown.csv", cost.CostBreakdownCsvView.as_view(),
         name="billing-spend-breakdown-csv"),
    # Usage and utilization.
    path("billing/usage/", usage.UsageView.as_view(), name="billing-usage"),
    path("billing/utilization/", usage.UtilizationView.as_view(), name="billing-utilization"),
    # Invoices (finance's moves, exports) and the rate card.
    path("billing/invoices/export.csv", invoices.InvoiceListCsvView.as_view(),
         name="invoices-export-csv"),
    path("billing/invoices/export.xlsx", invoices.InvoiceListXlsxView.as_view(),
         name="invoices-export-xlsx"),
    # A month's billed usage in the FinOps FOCUS format, for finance's tools.
    path("billing/invoices/focus.csv", focus.FocusCsvView.as_view(), name="invoices-focus-csv"),
    path("billing/invoices/<int:pk>/export.csv", invoices.InvoiceCsvView.as_view(),
         name="invoice-export-csv"),
    path("billing/invoices/<int:pk>/export.xlsx", invoices.InvoiceXlsxView.as_view(),
         name="invoice-export-xlsx"),
    path("billing/invoices/<int:pk>/export.pdf", invoices.InvoicePdfView.as_view(),
         name="invoice-export-pdf"),
    *router.urls,
]
