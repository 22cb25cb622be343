"""The tenants app's REST API: each sub-domain's viewsets, routed in `urls`."""
