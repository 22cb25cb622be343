from django.urls import path

from . import usage_views, views

app_name = "billing"

urlpatterns = [
    path("", views.tenant_billing, name="tenant"),
    path("invoices/", views.invoices, name="invoices"),
    path("usage/", usage_views.usage, name="usage"),
    path("rates/", usage_views.rates, name="rates"),
]
