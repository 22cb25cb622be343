"""Billing's writes, one module per part: accounts and budgets, rates, metering, invoicing.

Import the module you need (`from billing.services import invoicing`): each service is a
keyword-only function, one transaction, with its audit event.
"""
