"""Billing endpoints under /api/v1/."""

from django.urls import path

from . import spend, usage

urlpatterns: list = [
    # A tenant's spend this month and the price of a launch or of resources.
    path("billing/spend/", spend.SpendView.as_view(), name="billing-spend"),
    path("billing/quote/", spend.QuoteView.as_view(), name="billing-quote"),
    # Usage and utilization.
    path("billing/usage/", usage.UsageView.as_view(), name="billing-usage"),
    path("billing/utilization/", usage.UtilizationView.as_view(), name="billing-utilization"),
]
