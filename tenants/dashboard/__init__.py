"""The compositions on top of the sub-domains: the tenant's dashboard and members pages, the
tenants API (a tenant with its quota lines) and the tenant's Django admin (with its quotas).
Nothing below imports them; `tenants.access` is the bottom of tenants."""
