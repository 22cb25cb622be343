"""Writes about tenants, memberships and platform roles: each in one transaction, each leaving
an audit event."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from core.audit import audit

from .changes import tenant_mark_changed
from .models import Membership, RoleAssignment, ServiceAccount, Source, Tenant
from .rules import forget_access, tenants_managed_by

User = get_user_model()


@transaction.atomic
def tenant_create(
    *,
    actor: Any | None,
    slug: str,
    name: str,
    isolation: str = Tenant.Isolation.SHARED,
    cost_center: str = "",
) -> Tenant:
    tenant = Tenant(slug=slug, name=name, isolation=isolation, cost_center=cost_center)
    return tenant_add(actor=actor, tenant=tenant)


@transaction.atomic
def tenant_add(*, actor: Any | None, tenant: Tenant) -> Tenant:
    """Save a new tenant (e.g. filled in by an admin form) and put it on the cluster."""
    tenant.full_clean()
    try:
        # full_clean() checked the slug, but a concurrent request may insert it first: the
        # unique constraint decides, and the loser gets the same field error.
        with transaction.atomic():
            tenant.save()
    except IntegrityError:
        raise ValidationError({"slug": [tenant.unique_error_message(Tenant, ("slug",))]}) from None
    audit(
        actor=actor,
        action="tenant.create",
        obj=tenant,
        tenant=tenant,
        changes={"slug": tenant.slug, "name": tenant.name, "isolation": tenant.isolation},
    )
    tenant_mark_changed(tenants=[tenant])
    return tenant


@transaction.atomic
def membership_set(
    *, actor: Any | None, tenant: Tenant, user, role: str, source: str = Source.LOCAL
) -> Membership:
    """Give `user` `role` in `tenant` (creating or changing the membership)."""
    membership, created = Membership.objects.select_for_update().get_or_create(
        tenant=tenant, user=user, defaults={"role": role, "source": source}
    )
    before = None if created else membership.role
    if not created and (membership.role != role or membership.source != source):
        membership.role, membership.source = role, source
        membership.save(update_fields=["role", "source"])
    if created or before != role:
        audit(
            actor=actor,
            action="membership.set",
            obj=membership,
            tenant=tenant,
            changes={"user": user.get_username(), "role": [before, role], "source": source},
        )
    forget_access(user)
    return membership


@transaction.atomic
def membership_remove(*, actor: Any | None, membership: Membership) -> None:
    audit(
        actor=actor,
        action="membership.remove",
        obj=membership,
        tenant=membership.tenant,
        changes={
            "user": membership.user.get_username(),
            "role": membership.role,
            "source": membership.source,
        },
    )
    membership.delete()
    forget_access(membership.user)


@transaction.atomic
def role_grant(*, actor: Any | None, user, role: str, source: str = Source.LOCAL) -> RoleAssignment:
    if ServiceAccount.objects.filter(user=user).exists():
        raise ValidationError({"role": ["A service account holds no platform role."]})
    assignment, created = RoleAssignment.objects.get_or_create(
        user=user, role=role, defaults={"source": source}
    )
    if created:
        audit(
            actor=actor,
            action="role.grant",
            obj=assignment,
            changes={"user": user.get_username(), "role": role, "source": source},
        )
    forget_access(user)
    return assignment


@transaction.atomic
def role_revoke(*, actor: Any | None, assignment: RoleAssignment) -> None:
    audit(
        actor=actor,
        action="role.revoke",
        obj=assignment,
        changes={
            "user": assignment.user.get_username(),
            "role": assignment.role,
            "source": assignment.source,
        },
    )
    assignment.delete()
    forget_access(assignment.user)


# Fields of a tenant that change what the cluster holds.
ENFORCED_FIELDS = frozenset(
    {"isolation", "status", "cohort", "keycloak_group", "lends_reserved_gpus"}
)


@transaction.atomic
def tenant_update(*, actor: Any | None, tenant: Tenant, changed: list[str]) -> Tenant:
    """Save `tenant` (already validated) after an edit of `changed` fields; re-enforce it."""
    before = Tenant.objects.select_for_update().get(pk=tenant.pk)
    tenant.full_clean()
    tenant.save()
    diff = {
        name: [str(getattr(before, name)), str(getattr(tenant, name))]
        for name in changed
        if getattr(before, name, None) != getattr(tenant, name, None)
    }
    if diff:
        audit(actor=actor, action="tenant.update", obj=tenant, tenant=tenant, changes=diff)
    peers = [before] if before.cohort and before.cohort != tenant.cohort else []
    if ENFORCED_FIELDS & set(diff):
        # Leaving a cohort changes what its remaining members may borrow too.
        tenant_mark_changed(tenants=[tenant, *peers])
    return tenant


@transaction.atomic
def tenant_gpu_lending_set(*, actor: Any, tenant: Tenant, lends: bool) -> Tenant:
    """A dedicated tenant's owners (or platform admins) choose whether the shared tenants of
    its cohort may borrow the reserved GPUs it leaves idle. Audited; the tenant and its cohort's
    members are reconciled (their ClusterQueues list its flavors, or stop to)."""
    if not tenants_managed_by(actor).filter(pk=tenant.pk).exists():
        raise PermissionDenied("Only the tenant's owners choose whether it lends its GPUs.")
    locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
    if lends and locked.isolation != Tenant.Isolation.DEDICATED:
        raise ValidationError(
            {"lends_reserved_gpus": ["Only a dedicated tenant has reserved GPUs to lend."]})
    if lends and not locked.cohort:
        raise ValidationError({"lends_reserved_gpus": [
            "The tenant is in no cohort: a platform admin names the cohort it lends to first."]})
    if locked.lends_reserved_gpus == lends:
        return locked
    locked.lends_reserved_gpus = lends
    locked.save(update_fields=["lends_reserved_gpus"])
    audit(actor=actor, action="tenant.gpu_lending", obj=locked, tenant=locked,
          changes={"lends_reserved_gpus": [not lends, lends], "cohort": locked.cohort})
    tenant_mark_changed(tenants=[locked])
    return locked


# --- members, managed by the tenant's owners ---------------------------------------------------


def _managed(actor, tenant: Tenant) -> None:
    if not tenants_managed_by(actor).filter(pk=tenant.pk).exists():
        raise PermissionDenied("Only the tenant's owners manage its members.")


def _not_a_service_account(membership: Membership) -> None:
    if ServiceAccount.objects.filter(user_id=membership.user_id).exists():
        raise ValidationError(
            {"role": ["This is a service account: change it under Service accounts."]}
        )


def _not_from_keycloak(membership: Membership) -> None:
    if membership.source == Source.KEYCLOAK:
        raise ValidationError(
            {"role": ["This membership comes from Keycloak: change it in Keycloak."]}
        )


def _keeps_an_owner(membership: Membership, new_role: str | None) -> None:
    if membership.role != Membership.Role.OWNER or new_role == Membership.Role.OWNER:
        return
    others = membership.tenant.memberships.filter(role=Membership.Role.OWNER).exclude(
        pk=membership.pk
    )
    if not others.exists():
        raise ValidationError({"role": ["A tenant keeps at least one owner."]})


def _user_by_username_or_verified_email(needle: str):
    """The active user with this username, else the one active user whose e-mail Keycloak has
    verified. A local account's e-mail was typed by an admin and never proven, so it does not
    count; several verified accounts with one address are refused rather than guessed."""
    if not needle:
        raise ValidationError({"user": ["Give a username or an e-mail address."]})
    by_name = User.objects.filter(username__iexact=needle).first()
    if by_name is not None:
        return by_name
    verified = list(
        User.objects.filter(
            is_active=True, email__iexact=needle, oidc_identity__email_verified=True
        ).order_by("pk")[:2]
    )
    if len(verified) > 1:
        raise ValidationError(
            {"user": ["Several portal users have this verified e-mail: add them by username."]}
        )
    if not verified:
        raise ValidationError(
            {
                "user": [
                    "No portal user with this username or verified e-mail "
                    "(they sign in with Keycloak once first)."
                ]
            }
        )
    return verified[0]


@transaction.atomic
def tenant_member_add(*, actor, tenant: Tenant, username_or_email: str, role: str) -> Membership:
    """An owner adds an existing portal user to the tenant."""
    _managed(actor, tenant)
    if role not in Membership.Role.values:
        raise ValidationError({"role": ["Pick owner, member or viewer."]})
    user = _user_by_username_or_verified_email(username_or_email.strip())
    if ServiceAccount.objects.filter(user=user).exists():
        raise ValidationError({"user": ["A service account belongs to its one tenant."]})
    if tenant.memberships.filter(user=user).exists():
        raise ValidationError({"user": ["Already a member: change their role instead."]})
    return membership_set(actor=actor, tenant=tenant, user=user, role=role)


@transaction.atomic
def tenant_member_change_role(*, actor, membership: Membership, role: str) -> Membership:
    _managed(actor, membership.tenant)
    if role not in Membership.Role.values:
        raise ValidationError({"role": ["Pick owner, member or viewer."]})
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    _not_a_service_account(membership)
    _not_from_keycloak(membership)
    _keeps_an_owner(membership, role)
    return membership_set(actor=actor, tenant=membership.tenant, user=membership.user, role=role)


@transaction.atomic
def tenant_member_remove(*, actor, membership: Membership) -> None:
    _managed(actor, membership.tenant)
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    _not_a_service_account(membership)
    _not_from_keycloak(membership)
    _keeps_an_owner(membership, None)
    membership_remove(actor=actor, membership=membership)
