from django.urls import path

from . import views

app_name = "billing"

urlpatterns = [
    path("", views.tenant_billing, name="tenant"),
    path("invoices/", views.invoices, name="invoices"),
    path("usage/", views.usage, name="usage"),
]
