"""Billing endpoints under /api/v1/."""

from django.urls import path

from . import spend

urlpatterns: list = []

# A tenant's spend this month and the price of a launch or of resources (branch `spend`).
urlpatterns += [
    path("billing/spend/", spend.SpendView.as_view(), name="billing-spend"),
    path("billing/quote/", spend.QuoteView.as_view(), name="billing-quote"),
]
