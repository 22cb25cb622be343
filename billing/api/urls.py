"""Billing endpoints under /api/v1/."""

from django.urls import path

from . import usage

urlpatterns: list = []

# Usage and utilization (branch `usage`).
urlpatterns += [
    path("billing/usage/", usage.UsageView.as_view(), name="billing-usage"),
    path("billing/utilization/", usage.UtilizationView.as_view(), name="billing-utilization"),
]
