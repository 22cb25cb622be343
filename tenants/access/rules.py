"""The access rules every app uses: who holds which role, and what each user may see.

Tenant isolation is one rule: `tenants_visible_to(user)`. Every page and API that shows
tenant-owned data starts from it, so another tenant's object is simply not found (404).
"""

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.shortcuts import get_object_or_404

from .models import Membership, RoleAssignment, ServiceAccount, Tenant

_CACHE_ATTR = "_portal_access"


@dataclass(frozen=True)
class MemberTenant:
    """A tenant the user is a member of, as the tenant switcher links it."""

    pk: int
    slug: str
    name: str
    active: bool


@dataclass(frozen=True)
class Access:
    """What one user holds, read once per request."""

    platform_admin: bool = False
    finance: bool = False
    tenant_roles: dict[int, str] = field(default_factory=dict)  # tenant id -> role (active)
    # Every tenant the user is a member of, active or not, by name (the switcher's links).
    member_of: tuple[MemberTenant, ...] = ()

    @property
    def roles(self) -> list[str]:
        roles = []
        if self.platform_admin:
            roles.append(RoleAssignment.Role.PLATFORM_ADMIN.value)
        if self.finance:
            roles.append(RoleAssignment.Role.FINANCE.value)
        return roles

    @property
    def sees_all_tenants(self) -> bool:
        return self.platform_admin or self.finance

    @property
    def has_any_access(self) -> bool:
        return self.platform_admin or self.finance or bool(self.tenant_roles)


def access_for(user) -> Access:
    """Roles and memberships of `user`, cached on the user object for the request."""
    if user is None or not user.is_authenticated or not user.is_active:
        return Access()
    cached = getattr(user, _CACHE_ATTR, None)
    if cached is not None:
        return cached
    # One query for both: the platform roles (no tenant) and the memberships with their
    # tenant's slug, name and status (a role counts in active tenants only); every signed-in
    # page reads them, and the tenant pages' switcher links them.
    roles: set[str] = set()
    tenant_roles: dict[int, str] = {}
    member_of: list[MemberTenant] = []
    for tenant_id, role, slug, name, status in _access_rows(user.pk):
        if tenant_id is None:
            roles.add(role)
            continue
        active = status == Tenant.Status.ACTIVE
        if active:
            tenant_roles[tenant_id] = role
        member_of.append(MemberTenant(pk=tenant_id, slug=slug, name=name, active=active))
    access = Access(
        platform_admin=user.is_superuser or RoleAssignment.Role.PLATFORM_ADMIN in roles,
        finance=RoleAssignment.Role.FINANCE in roles,
        tenant_roles=tenant_roles,
        member_of=tuple(sorted(member_of, key=lambda t: (t.name, t.pk))),
    )
    setattr(user, _CACHE_ATTR, access)
    return access


def _access_rows(user_id: int) -> QuerySet:
    """(tenant id, role, slug, name, status): a platform role with no tenant, or a membership
    with its tenant's; one UNION ALL."""
    def none(field: models.Field) -> Value:
        return Value(None, output_field=field)

    platform = RoleAssignment.objects.filter(user_id=user_id).order_by().values_list(
        none(models.IntegerField()), "role", none(models.CharField()),
        none(models.CharField()), none(models.CharField()),
    )
    memberships = Membership.objects.filter(user_id=user_id).order_by().values_list(
        "tenant_id", "role", "tenant__slug", "tenant__name", "tenant__status"
    )
    return platform.union(memberships, all=True)


def forget_access(user) -> None:
    """Drop the cached access after roles or memberships changed."""
    if hasattr(user, _CACHE_ATTR):
        delattr(user, _CACHE_ATTR)


def is_platform_admin(user) -> bool:
    return access_for(user).platform_admin


def is_finance(user) -> bool:
    return access_for(user).finance


def tenants_visible_to(user) -> QuerySet[Tenant]:
    """Tenants whose data `user` may read: all for admins and finance, else memberships."""
    access = access_for(user)
    if access.sees_all_tenants:
        return Tenant.objects.all()
    return Tenant.objects.filter(pk__in=list(access.tenant_roles))


def in_tenants_visible_to(queryset: QuerySet, user) -> QuerySet:
    """`queryset` (of a model with a `tenant`) narrowed to the tenants `user` may see, as
    `tenants_visible_to(user)`. For those who see every tenant it is left whole: an `IN` over
    the tenants table filtered nothing and made every count a join of the two tables."""
    access = access_for(user)
    if access.sees_all_tenants:
        return queryset
    return queryset.filter(tenant_id__in=list(access.tenant_roles))


def tenant_slug() -> Subquery:
    """The slug of the row's `tenant`, for `annotate`: a subquery, not a join, so that the
    list's count (which drops annotations it does not need) counts the rows alone."""
    return Subquery(Tenant.objects.filter(pk=OuterRef("tenant_id")).order_by().values("slug")[:1])


def username_of(user_field: str, column: str = "username") -> Subquery:
    """The username (or another `column`) of the user the row's `user_field`
    (`launched_by_id`) names, or None; a subquery for `annotate`, as `tenant_slug`."""
    return Subquery(
        get_user_model().objects.filter(pk=OuterRef(user_field)).values(column)[:1]
    )


def tenants_managed_by(user) -> QuerySet[Tenant]:
    """Tenants whose members `user` may manage: owners' tenants, all for platform admins."""
    access = access_for(user)
    if access.platform_admin:
        return Tenant.objects.all()
    owned = [pk for pk, role in access.tenant_roles.items() if role == Membership.Role.OWNER]
    return Tenant.objects.filter(pk__in=owned)


def tenants_operated_by(user) -> QuerySet[Tenant]:
    """Tenants in which `user` may launch workloads and ask for quota (owner or member)."""
    access = access_for(user)
    if access.platform_admin:
        return Tenant.objects.all()
    allowed = {Membership.Role.OWNER, Membership.Role.MEMBER}
    ids = [pk for pk, role in access.tenant_roles.items() if role in allowed]
    return Tenant.objects.filter(pk__in=ids)


def tenant_get_for_user(*, user, slug: str) -> Tenant:
    """The tenant `slug` if `user` may see it; missing and forbidden are the same 404."""
    return get_object_or_404(tenants_visible_to(user), slug=slug)


def role_in_tenant(user, tenant: Tenant) -> str | None:
    return access_for(user).tenant_roles.get(tenant.pk)


class PlatformRoleBackend:
    """Grants every model permission to platform admins (Django admin uses these checks).

    Listed before ModelBackend (settings.AUTHENTICATION_BACKENDS), so an admin's checks end
    here. Not a BaseBackend: it has no get_user(), so that Django, which signs a user in
    through the first listed backend that has one when told none, keeps choosing ModelBackend;
    BaseBackend's permission listings (get_all_permissions and the like) were empty anyway."""

    def authenticate(self, request, **credentials):
        return None

    def has_perm(self, user_obj, perm, obj=None) -> bool:
        return bool(user_obj.is_active and is_platform_admin(user_obj))

    def has_module_perms(self, user_obj, app_label) -> bool:
        return bool(user_obj.is_active and is_platform_admin(user_obj))


class ServiceAccountSignInRefused:
    """Listed before ModelBackend: a service account's user never signs in with a password
    (it has none; this holds even if an admin set one). Django stops at PermissionDenied."""

    def authenticate(self, request, username=None, **credentials):
        if username and ServiceAccount.objects.filter(user__username__iexact=username).exists():
            raise PermissionDenied("Service accounts do not sign in.")
        return None


# --- what other apps may know of tenants ------------------------------------------------------
# The inventory names tenants by slug (a node reserved for one, the namespaces of pods it saw):
# these answer its questions without it reaching into tenants' models.


def tenant_slugs() -> set[str]:
    """Every tenant's slug (an import checks that a node's reserved tenant exists)."""
    return set(Tenant.objects.values_list("slug", flat=True))


def tenant_slugs_for_namespaces(namespaces) -> set[str]:
    """The tenants owning these namespaces (each tenant has one: `Tenant.namespace`)."""
    wanted = set(namespaces)
    if not wanted:
        return set()
    return {t.slug for t in Tenant.objects.only("slug") if t.namespace in wanted}


def tenant_names_for_namespaces(namespaces, *, slugs=()) -> dict[str, tuple[str, str]]:
    """The tenants owning these namespaces, or with these slugs: namespace → (slug, name)."""
    wanted, slugs = set(namespaces), set(slugs)
    if not wanted and not slugs:
        return {}
    return {t.namespace: (t.slug, t.name) for t in Tenant.objects.only("slug", "name")
            if t.namespace in wanted or t.slug in slugs}


def tenant_owner_emails(slugs) -> dict[str, list[str]]:
    """The e-mail addresses of each tenant's active owners, by tenant slug."""
    owners: dict[str, list[str]] = {}
    memberships = Membership.objects.filter(
        tenant__slug__in=set(slugs), role=Membership.Role.OWNER, user__is_active=True
    ).values_list("tenant__slug", "user__email")
    for slug, email in memberships:
        if email:
            owners.setdefault(slug, []).append(email)
    return owners
