"""Billing endpoints under /api/v1/."""

from django.urls import path

from .spend import QuoteView, SpendView

urlpatterns: list = [
    # A tenant's spend this month and the price of a launch or of resources.
    path("billing/spend/", SpendView.as_view(), name="billing-spend"),
    path("billing/quote/", QuoteView.as_view(), name="billing-quote"),
]
