from django.urls import path

from . import tenant_views, usage_views, views

app_name = "billing"

urlpatterns = [
    # What tenants see of cost: their spend page, the dashboard's card, their invoices' PDFs,
    # and the price on launch and quota-request forms.
    path("", tenant_views.tenant_home, name="tenant"),
    path("t/<slug:slug>/", tenant_views.spend, name="tenant-spend"),
    path("t/<slug:slug>/card/", tenant_views.spend_card, name="tenant-spend-card"),
    path("t/<slug:slug>/invoices/<int:pk>.pdf", tenant_views.invoice_pdf_download,
         name="tenant-invoice-pdf"),
    path("quote/", tenant_views.quote, name="quote"),
    # The usage explorer (finance and admins) and the rate card (everyone signed in).
    path("usage/", usage_views.usage, name="usage"),
    path("rates/", usage_views.rates, name="rates"),
    # Finance's invoices.
    path("invoices/", views.invoices, name="invoices"),
]
