"""Django admin for usage records, metering windows and OpenCost cross-checks (read-only)."""
