"""What the fleet costs: rate cards, usage and invoices (models arrive with metering)."""
