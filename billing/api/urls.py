"""Billing endpoints under /api/v1/."""

urlpatterns: list = []
