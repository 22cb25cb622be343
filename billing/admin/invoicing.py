"""Django admin for rate cards, billing accounts, invoices and credit notes."""
