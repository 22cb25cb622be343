"""What the inventory asks of the tenants it serves, without importing them.

The inventory sits below tenants (core < inventory < tenants < billing): it names tenants by
slug (a node reserved for one, the namespaces of pods it saw) and shows its pages to people by
the roles tenants grant. The tenants app answers these questions: it installs its directory
when Django starts (tenants.apps). Without one (no tenants app), nobody holds a role and no
namespace belongs to a tenant.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class TenantDirectory(Protocol):
    def is_platform_admin(self, user) -> bool: ...

    def has_any_role(self, user) -> bool:
        """A platform admin, finance, or a member of an active tenant."""

    def tenant_slugs(self) -> set[str]: ...

    def tenant_slugs_for_namespaces(self, namespaces: Iterable[str]) -> set[str]: ...

    def tenant_names_for_namespaces(
        self, namespaces: Iterable[str], *, slugs: Iterable[str] = ()
    ) -> dict[str, tuple[str, str]]:
        """namespace → (slug, name) of the tenants owning these namespaces or with these slugs."""

    def tenant_owner_emails(self, slugs: Iterable[str]) -> dict[str, list[str]]: ...


class _Nobody:
    def is_platform_admin(self, user) -> bool:
        return False

    def has_any_role(self, user) -> bool:
        return False

    def tenant_slugs(self) -> set[str]:
        return set()

    def tenant_slugs_for_namespaces(self, namespaces) -> set[str]:
        return set()

    def tenant_names_for_namespaces(self, namespaces, *, slugs=()) -> dict:
        return {}

    def tenant_owner_emails(self, slugs) -> dict:
        return {}


_directory: TenantDirectory = _Nobody()


def install(directory: TenantDirectory) -> None:
    """Called once by the tenants app when Django starts."""
    global _directory
    _directory = directory


def tenant_directory() -> TenantDirectory:
    return _directory
