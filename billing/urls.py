from django.urls import path

from . import views

app_name = "billing"

urlpatterns = [
    path("", views.tenant_billing, name="tenant"),
    path("invoices/", views.invoices, name="invoices"),
    path("usage/", views.usage, name="usage"),
]

# The usage explorer (replacing the placeholder `usage` page) and the rate card (branch `usage`).
from . import usage_views  # noqa: E402

urlpatterns = [pattern for pattern in urlpatterns if pattern.name != "usage"] + [
    path("usage/", usage_views.usage, name="usage"),
    path("rates/", usage_views.rates, name="rates"),
]
