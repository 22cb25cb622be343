from django.urls import path

from . import tenant_views, views

app_name = "billing"

urlpatterns = [
    path("", tenant_views.tenant_home, name="tenant"),
    path("invoices/", views.invoices, name="invoices"),
    path("usage/", views.usage, name="usage"),
]

# What tenants see of cost (branch `spend`): their spend page, the dashboard's card, their
# invoices' PDFs, and the price on launch and quota-request forms.
urlpatterns += [
    path("t/<slug:slug>/", tenant_views.spend, name="tenant-spend"),
    path("t/<slug:slug>/card/", tenant_views.spend_card, name="tenant-spend-card"),
    path("t/<slug:slug>/invoices/<int:pk>.pdf", tenant_views.invoice_pdf_download,
         name="tenant-invoice-pdf"),
    path("quote/", tenant_views.quote, name="quote"),
]
