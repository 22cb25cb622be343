"""The tenants app's answers to what the inventory asks of tenants (inventory.tenancy)."""

from . import rules


class AccessRulesDirectory:
    def is_platform_admin(self, user) -> bool:
        return rules.is_platform_admin(user)

    def has_any_role(self, user) -> bool:
        return rules.access_for(user).has_any_access

    def tenant_slugs(self) -> set[str]:
        return rules.tenant_slugs()

    def tenant_slugs_for_namespaces(self, namespaces) -> set[str]:
        return rules.tenant_slugs_for_namespaces(namespaces)

    def tenant_names_for_namespaces(self, namespaces, *, slugs=()) -> dict:
        return rules.tenant_names_for_namespaces(namespaces, slugs=slugs)

    def tenant_owner_emails(self, slugs) -> dict:
        return rules.tenant_owner_emails(slugs)
