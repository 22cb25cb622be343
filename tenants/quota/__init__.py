"""Quota: what tenants are granted, their requests for more, and the capacity they compare with."""
