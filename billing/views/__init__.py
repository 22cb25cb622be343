"""Billing pages: tenants' spend (`tenant`), finance's invoices (`finance`, `cost_centers`),
the usage explorer and the rate card (`usage`)."""
