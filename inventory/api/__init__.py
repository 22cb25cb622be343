"""The inventory's REST API under /api/v1/: admins see everything, anyone with a role sees
capacity summaries only."""
