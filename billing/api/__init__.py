"""The billing API (rate cards, usage, invoices)."""
