from django.urls import path

from .views import cost, cost_centers, exports, finance, pickers, tenant, usage

app_name = "billing"

urlpatterns = [
    # What tenants see of cost: their spend page, the dashboard's card, their invoices' PDFs,
    # and the price on launch and quota-request forms.
    path("", tenant.tenant_home, name="tenant"),
    path("t/<slug:slug>/", tenant.spend, name="tenant-spend"),
    path("t/<slug:slug>/card/", tenant.spend_card, name="tenant-spend-card"),
    path("t/<slug:slug>/cost.csv", cost.cost_csv, name="tenant-cost-csv"),
    path("t/<slug:slug>/invoices/<int:pk>.pdf", tenant.invoice_pdf_download,
         name="tenant-invoice-pdf"),
    path("quote/", tenant.quote, name="quote"),
    # The usage explorer (finance and admins) and the rate card (everyone signed in).
    path("usage/", usage.usage, name="usage"),
    path("rates/", usage.rates, name="rates"),
    # Finance's invoice pages and the roll-up by cost center.
    path("invoices/", finance.invoice_list, name="invoices"),
    path("invoices/issue/", finance.invoices_issue_bulk, name="invoices-issue"),
    path("invoices/draft-month/", finance.invoices_draft_month, name="invoices-draft-month"),
    path("invoices/export.<str:fmt>", finance.invoices_export, name="invoices-export"),
    path("invoices/focus.csv", cost.focus_csv_download, name="invoices-focus"),
    path("invoices/exports/", exports.export_list, name="invoice-exports"),
    path("invoices/exports/<int:export_id>/download/", exports.export_download,
         name="invoice-export-download"),
    path("invoices/<int:invoice_id>/", finance.invoice_detail, name="invoice-detail"),
    path("invoices/<int:invoice_id>/recompute/", finance.invoice_recompute,
         name="invoice-recompute"),
    path("invoices/<int:invoice_id>/issue/", finance.invoice_issue, name="invoice-issue"),
    path("invoices/<int:invoice_id>/pay/", finance.invoice_pay, name="invoice-pay"),
    path("invoices/<int:invoice_id>/void/", finance.invoice_void, name="invoice-void"),
    path("invoices/<int:invoice_id>/credit-notes/", finance.invoice_credit_note,
         name="invoice-credit-note"),
    path("invoices/<int:invoice_id>/invoice.<str:fmt>", finance.invoice_download,
         name="invoice-download"),
    path("cost-centers/", cost_centers.cost_center_list, name="cost-centers"),
    # The options of the filters' tenant and cost-center pickers, as the person types.
    path("filter-options/<str:kind>/", pickers.filter_options, name="filter-options"),
]
