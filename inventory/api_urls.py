"""Inventory endpoints under /api/v1/."""

urlpatterns: list = []
