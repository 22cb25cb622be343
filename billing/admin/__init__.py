"""Billing in Django admin: rate cards, accounts and invoices (invoicing), usage and metering."""

from . import invoicing, usage  # noqa: F401  (each module registers its ModelAdmins)
