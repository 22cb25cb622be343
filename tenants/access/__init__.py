"""Tenants, their members and platform roles, and the access rules every app uses.

Other apps reach tenants through the rules exported here: who holds which role, and which
tenants a user may see (`tenants_visible_to`: another tenant's object is a 404 everywhere).
"""

from .rules import (
    Access,
    PlatformRoleBackend,
    access_for,
    forget_access,
    is_finance,
    is_platform_admin,
    role_in_tenant,
    tenant_get_for_user,
    tenant_names_for_namespaces,
    tenant_owner_emails,
    tenant_slug,
    tenant_slugs,
    tenant_slugs_for_namespaces,
    tenants_managed_by,
    tenants_operated_by,
    tenants_visible_to,
    username_of,
)

__all__ = [
    "Access",
    "PlatformRoleBackend",
    "access_for",
    "forget_access",
    "is_finance",
    "is_platform_admin",
    "role_in_tenant",
    "tenant_get_for_user",
    "tenant_names_for_namespaces",
    "tenant_owner_emails",
    "tenant_slug",
    "tenant_slugs",
    "tenant_slugs_for_namespaces",
    "tenants_managed_by",
    "tenants_operated_by",
    "tenants_visible_to",
    "username_of",
]
