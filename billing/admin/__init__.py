"""Billing in Django admin: rate cards, accounts, credit notes and budget alerts (accounts),
invoices (invoicing), usage and metering (usage)."""

from . import accounts, invoicing, usage  # noqa: F401  (each module registers its ModelAdmins)
