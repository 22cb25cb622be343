from django.urls import path

from . import views

app_name = "billing"

urlpatterns = [
    path("", views.tenant_billing, name="tenant"),
    path("invoices/", views.invoices, name="invoices"),
    path("usage/", views.usage, name="usage"),
]

# Finance's invoice pages and the roll-up by cost center (branch `fin`), replacing the
# placeholder `invoices` page.
from .views import cost_centers, finance  # noqa: E402

urlpatterns = [pattern for pattern in urlpatterns if pattern.name != "invoices"] + [
    path("invoices/", finance.invoice_list, name="invoices"),
    path("invoices/issue/", finance.invoices_issue_bulk, name="invoices-issue"),
    path("invoices/draft-month/", finance.invoices_draft_month, name="invoices-draft-month"),
    path("invoices/export.<str:fmt>", finance.invoices_export, name="invoices-export"),
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
]
