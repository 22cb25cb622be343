"""Billing's reads, one module per part, each scoped to what the user may see."""
