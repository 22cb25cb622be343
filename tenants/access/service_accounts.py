"""Service accounts (services): a tenant's owners create, change, disable and delete them, and
issue and revoke their API tokens; only platform admins link one to a Keycloak client. Each write
in one transaction, audited in the tenant's trail.

A service account is a user of its own (no password, no Keycloak identity: it cannot sign in in
the browser) holding one membership in its tenant, so every access rule applies to it as to a
person with that role; its tokens are ordinary API tokens of that user, with scopes and expiry.
"""

from collections.abc import Iterable
from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from core.api.authentication import LAST_USED_RESOLUTION
from core.api.scopes import Scope, scopes_validated
from core.audit import audit
from core.errors import Conflict
from core.models import ApiToken
from core.tokens import IssuedToken, api_token_create, api_token_revoke

from .models import Membership, ServiceAccount, Tenant, service_account_username
from .rules import forget_access, is_platform_admin, tenants_managed_by
from .services import membership_set

User = get_user_model()


def _managed(actor, tenant: Tenant) -> None:
    if not tenants_managed_by(actor).filter(pk=tenant.pk).exists():
        raise PermissionDenied("Only the tenant's owners manage its service accounts.")


def _role_checked(role: str) -> str:
    if role not in dict(ServiceAccount.ROLES):
        raise ValidationError({"role": ["Pick member or viewer."]})
    return role


def _client_id(value: str | None) -> str | None:
    return (value or "").strip() or None


LINK_REFUSED = ("A platform admin links Keycloak clients to service accounts: ask one to link "
                "this account's client.")


def _may_link(actor) -> None:
    """Only platform admins link a Keycloak client: the client's tokens then act in the tenant,
    and a client id is the realm's, not the tenant's (an owner claiming another tenant's CI
    client would take over its tokens). Checked before the client id's uniqueness, which
    would tell an owner which client ids are taken."""
    if not is_platform_admin(actor):
        raise ValidationError({"keycloak_client_id": [LINK_REFUSED]})


@transaction.atomic
def service_account_create(
    *,
    actor,
    tenant: Tenant,
    name: str,
    role: str = Membership.Role.MEMBER,
    scopes: Iterable[str] = (Scope.READ,),
    keycloak_client_id: str | None = None,
) -> ServiceAccount:
    _managed(actor, tenant)
    if _client_id(keycloak_client_id) is not None:
        _may_link(actor)
    name = name.strip()
    account = ServiceAccount(
        tenant=tenant, name=name, role=_role_checked(role),
        scopes=scopes_validated(scopes, required=False),
        keycloak_client_id=_client_id(keycloak_client_id), created_by=actor,
    )
    # The name (a DNS-1123 label), its uniqueness in the tenant and the client id's, before
    # anything is written; `user` is the one field not chosen yet.
    account.full_clean(exclude=["user"])
    username = service_account_username(tenant_slug=tenant.slug, name=name)
    if User.objects.filter(username__iexact=username).exists():
        raise ValidationError({"name": ["A portal account already holds this name."]})
    try:
        with transaction.atomic():
            account.user = User.objects.create_user(username=username, password=None)
            account.save()
    except IntegrityError:  # a concurrent create took the name or the client id
        raise ValidationError(
            {"name": ["A service account with this name or Keycloak client exists."]}
        ) from None
    membership_set(actor=actor, tenant=tenant, user=account.user, role=account.role)
    audit(actor=actor, action="service_account.create", obj=account, tenant=tenant,
          changes={"name": name, "role": account.role, "scopes": account.scopes,
                   "keycloak_client_id": account.keycloak_client_id})
    return account


def _locked(account: ServiceAccount) -> ServiceAccount:
    return (ServiceAccount.objects.select_for_update().select_related("tenant", "user")
            .get(pk=account.pk))


@transaction.atomic
def service_account_update(
    *,
    actor,
    account: ServiceAccount,
    role: str | None = None,
    scopes: Iterable[str] | None = None,
    keycloak_client_id: str | None = None,
    change_client_id: bool = False,
) -> ServiceAccount:
    """Change the role, the Keycloak tokens' scopes or (platform admins only) the Keycloak
    client, given ones only."""
    _managed(actor, account.tenant)
    account = _locked(account)
    if change_client_id and _client_id(keycloak_client_id) != account.keycloak_client_id:
        _may_link(actor)
    before = {"role": account.role, "scopes": account.scopes,
              "keycloak_client_id": account.keycloak_client_id}
    if role is not None:
        account.role = _role_checked(role)
    if scopes is not None:
        account.scopes = scopes_validated(scopes, required=False)
    if change_client_id:
        account.keycloak_client_id = _client_id(keycloak_client_id)
    account.full_clean(exclude=["user"])
    after = {"role": account.role, "scopes": account.scopes,
             "keycloak_client_id": account.keycloak_client_id}
    diff = {key: [before[key], after[key]] for key in before if before[key] != after[key]}
    if not diff:
        return account
    try:
        with transaction.atomic():
            account.save(update_fields=list(diff))
    except IntegrityError:
        raise ValidationError(
            {"keycloak_client_id": ["Another service account uses this Keycloak client."]}
        ) from None
    if "role" in diff:
        membership_set(actor=actor, tenant=account.tenant, user=account.user, role=account.role)
    audit(actor=actor, action="service_account.update", obj=account, tenant=account.tenant,
          changes=diff)
    return account


@transaction.atomic
def service_account_set_disabled(*, actor, account: ServiceAccount, disabled: bool
                                 ) -> ServiceAccount:
    """Disable (every token and Keycloak client-credentials token stops working at once: its
    user is inactive) or enable again."""
    _managed(actor, account.tenant)
    account = _locked(account)
    if (account.disabled_at is not None) == disabled:
        return account
    account.disabled_at = timezone.now() if disabled else None
    account.save(update_fields=["disabled_at"])
    account.user.is_active = not disabled
    account.user.save(update_fields=["is_active"])
    forget_access(account.user)
    audit(actor=actor, action="service_account.disable" if disabled else "service_account.enable",
          obj=account, tenant=account.tenant, changes={"name": account.name})
    return account


@transaction.atomic
def service_account_delete(*, actor, account: ServiceAccount) -> None:
    """Delete the account, its membership and its tokens (its user goes with them)."""
    _managed(actor, account.tenant)
    account = _locked(account)
    tokens = list(account.user.api_tokens.filter(revoked_at__isnull=True)
                  .values_list("name", flat=True))
    audit(actor=actor, action="service_account.delete", obj=account, tenant=account.tenant,
          changes={"name": account.name, "role": account.role, "active_tokens": tokens})
    user = account.user
    forget_access(user)
    try:
        with transaction.atomic():
            user.delete()  # cascades: the account, its membership, its tokens
    except ProtectedError:  # a record that must keep naming it (e.g. billing's)
        raise Conflict("Records name this service account and must keep it: disable it "
                       "instead.") from None


@transaction.atomic
def service_account_token_create(
    *,
    actor,
    account: ServiceAccount,
    name: str,
    scopes: Iterable[str],
    expires_at: datetime | None = None,
) -> IssuedToken:
    _managed(actor, account.tenant)
    account = _locked(account)
    if account.disabled_at is not None:
        raise ValidationError({"name": ["The service account is disabled: enable it first."]})
    return api_token_create(user=account.user, name=name, expires_at=expires_at, scopes=scopes,
                            actor=actor, tenant=account.tenant)


def service_account_token_revoke(*, actor, account: ServiceAccount, token: ApiToken) -> ApiToken:
    _managed(actor, account.tenant)
    if token.user_id != account.user_id:
        raise PermissionDenied("This token is not the service account's.")
    return api_token_revoke(token=token, actor=actor, tenant=account.tenant)


def service_account_note_keycloak_use(*, account: ServiceAccount) -> None:
    """Record that a Keycloak token of its client was used (at most once a minute: a write per
    request would turn every read into one)."""
    now = timezone.now()
    last = account.keycloak_last_used_at
    if last is None or now - last > LAST_USED_RESOLUTION:
        ServiceAccount.objects.filter(pk=account.pk).update(keycloak_last_used_at=now)
