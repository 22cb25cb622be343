"""Webhooks: HTTPS endpoints that hear about a tenant's events (or every tenant's: a platform
admin's hook), each delivery signed the Standard Webhooks way and sent from an outbox with
retries; a hook that keeps failing is disabled and its owners told."""
