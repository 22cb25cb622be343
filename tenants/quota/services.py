"""Quota requests: a tenant asks, a platform admin decides, the cluster enforces.

Every service runs in one transaction, moves the request through its state machine (a
conditional UPDATE, so two admins approving at once cannot both win), leaves an audit event and
queues its follow-up (reconcile, mail) only after commit.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from core.audit import audit
from core.validators import column_max, validate_readable_text
from inventory import resource_classes

from ..access.changes import tenant_mark_changed
from ..access.models import Membership, Tenant
from ..access.rules import access_for, is_platform_admin, tenants_operated_by
from . import rules as quota_rules
from .models import Quota, QuotaRequest, QuotaRequestLine
from .notifications import quota_request_notify, quota_request_webhook


@dataclass(frozen=True)
class QuotedPrice:
    """The price a tenant was shown for its request (billing's quote, in the page's words)."""

    per_hour: Decimal
    per_month: Decimal
    currency: str
    complete: bool = True
    # Per resource class priced: one unit's price per hour (what a list prices its rows by).
    unit_prices: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True)
class LineInput:
    resource: str
    amount: int


def _line_inputs(lines: Iterable[LineInput | Mapping[str, Any]]) -> list[LineInput]:
    return [
        line if isinstance(line, LineInput) else LineInput(line["resource"], line["amount"])
        for line in lines
    ]


def quota_request_validate(
    *,
    tenant: Tenant,
    lines: list[LineInput],
    justification: str,
    ends_on: datetime.date | None,
    cluster: str | None = None,
) -> None:
    """Raise ValidationError with field errors (`lines.<i>.<field>` per line) if invalid."""
    errors: dict[str, Any] = {}
    try:
        quota_rules.check_cluster(cluster=cluster)
    except ValidationError as exc:
        errors["cluster"] = exc.messages
    if not justification.strip():
        errors["justification"] = ["Say what the quota is for: the platform team decides on it."]
    elif len(justification) > quota_rules.MAX_JUSTIFICATION:
        errors["justification"] = [f"At most {quota_rules.MAX_JUSTIFICATION} characters."]
    else:
        try:
            validate_readable_text(justification)
        except ValidationError as exc:
            errors["justification"] = exc.messages
    try:
        quota_rules.check_ends_on(ends_on=ends_on, today=timezone.localdate())
    except ValidationError as exc:
        errors["ends_on"] = exc.messages
    if not lines:
        errors["lines"] = ["Ask for at least one resource."]
    else:
        for i, line in enumerate(lines):
            resource_class = None
            try:
                resource_class = quota_rules.check_resource(
                    resource=line.resource, isolation=tenant.isolation
                )
            except ValidationError as exc:
                errors[f"lines.{i}.resource"] = exc.messages
            try:
                quota_rules.check_amount(amount=line.amount, resource_class=resource_class)
            except ValidationError as exc:
                errors[f"lines.{i}.amount"] = exc.messages
        if not errors:
            try:
                quota_rules.check_no_duplicates([line.resource for line in lines])
            except ValidationError as exc:
                errors["lines"] = exc.messages
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def quota_request_create(
    *,
    tenant: Tenant,
    requested_by,
    lines: Iterable[LineInput | Mapping[str, Any]],
    justification: str,
    ends_on: datetime.date | None = None,
    quote: QuotedPrice | None = None,
    cluster: str | None = None,
) -> QuotaRequest:
    """An owner or member of `tenant` asks for more of one or more resource classes; `quote`
    is the price the page showed for it, kept on the request for the requester and reviewer."""
    if not tenants_operated_by(requested_by).filter(pk=tenant.pk).exists():
        raise PermissionDenied("Only the tenant's owners and members ask for quota.")
    if tenant.status != Tenant.Status.ACTIVE:
        raise ValidationError({"tenant": ["The tenant is suspended."]})
    inputs = _line_inputs(lines)
    quota_request_validate(
        tenant=tenant, lines=inputs, justification=justification, ends_on=ends_on,
        cluster=cluster,
    )
    request = QuotaRequest.objects.create(
        tenant=tenant,
        cluster_id=cluster,
        requested_by=requested_by,
        justification=justification.strip(),
        ends_on=ends_on,
        **({} if quote is None else {
            "quoted_per_hour": quote.per_hour, "quoted_per_month": quote.per_month,
            "quoted_currency": quote.currency, "quote_complete": quote.complete,
        }),
    )
    QuotaRequestLine.objects.bulk_create(
        QuotaRequestLine(request=request, resource=line.resource, amount=line.amount)
        for line in inputs
    )
    audit(
        actor=requested_by,
        action="quota_request.submit",
        obj=request,
        tenant=tenant,
        changes={
            "lines": {line.resource: line.amount for line in inputs},
            "ends_on": ends_on.isoformat() if ends_on else None,
            "cluster": cluster,
            **({} if quote is None else {"quoted_per_hour": str(quote.per_hour),
                                         "quoted_currency": quote.currency}),
        },
    )
    quota_request_notify(request_id=request.pk, event="submitted")
    return request


def _decider(user) -> None:
    if not is_platform_admin(user):
        raise PermissionDenied("Only platform admins decide on quota requests.")


def _granted_amounts(
    lines: list[QuotaRequestLine], amounts: Mapping[str, int] | None
) -> dict[str, int]:
    amounts = dict(amounts or {})
    unknown = set(amounts) - {line.resource for line in lines}
    if unknown:
        raise ValidationError({"amounts": [f"Not in this request: {', '.join(sorted(unknown))}."]})
    granted, errors = {}, []
    for line in lines:
        value = amounts.get(line.resource, line.amount)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            errors.append(f"{line.resource}: a whole number, 0 or more.")
        elif value > quota_rules.ceiling(resource_classes.parse(line.resource)):
            errors.append(f"{line.resource}: {value:,} is beyond any plausible grant.")
        else:
            granted[line.resource] = value
    if errors:
        raise ValidationError({"amounts": errors})
    if not any(granted.values()):
        raise ValidationError({"amounts": ["Granting nothing is a rejection: reject it instead."]})
    return granted


@transaction.atomic
def quota_request_approve(
    *,
    request_id: int,
    approver,
    amounts: Mapping[str, int] | None = None,
    note: str = "",
) -> QuotaRequest:
    """Grant the request (optionally with changed `amounts` per resource) and enforce it."""
    _decider(approver)
    request = QuotaRequest.objects.select_related("tenant").get(pk=request_id)
    if request.ends_on is not None and request.ends_on < timezone.localdate():
        # It waited past its own end date: granting it now would only be taken back tonight.
        raise ValidationError(
            {
                "ends_on": [
                    f"The grant was asked until {request.ends_on:%Y-%m-%d}, which has passed."
                ]
            }
        )
    lines = list(request.lines.all())
    granted = _granted_amounts(lines, amounts)
    now = timezone.now()
    # The conditional UPDATE: of two concurrent approvals, the second finds no 'submitted' row.
    request.move_to(
        QuotaRequest.Status.APPROVED, decided_by=approver, decided_at=now, decision_note=note
    )
    tenant = Tenant.objects.select_for_update().get(pk=request.tenant_id)  # one grant at a time
    # Granted where it was asked: on its cluster, or fleet-wide.
    quotas = {q.resource: q for q in Quota.objects.select_for_update().filter(
        tenant=tenant, cluster_id=request.cluster_id)}
    changes = {}
    limit_max = column_max(Quota._meta.get_field("limit"))
    for line in lines:
        quota = quotas.get(line.resource) or Quota(
            tenant=tenant, cluster_id=request.cluster_id, resource=line.resource, limit=0)
        before = quota.limit
        if before + granted[line.resource] > limit_max:
            raise ValidationError(
                {"amounts": [f"{line.resource}: the quota would exceed {limit_max:,}."]}
            )
        quota.limit, quota.updated_at = before + granted[line.resource], now
        quota.save()
        line.approved_amount = granted[line.resource]
        line.limit_before, line.limit_after = before, quota.limit
        changes[line.resource] = {
            "asked": line.amount,
            "granted": line.approved_amount,
            "limit": [before, quota.limit],
        }
    QuotaRequestLine.objects.bulk_update(lines, ["approved_amount", "limit_before", "limit_after"])
    version = tenant_mark_changed(tenants=[tenant])[tenant.pk]
    QuotaRequest.objects.filter(pk=request.pk).update(tenant_version=version)
    request.tenant_version = version
    changed = any(line.approved_amount != line.amount for line in lines)
    audit(
        actor=approver,
        action="quota_request.approve_changed" if changed else "quota_request.approve",
        obj=request,
        tenant=tenant,
        changes={"lines": changes, "note": note, "ends_on": _iso(request.ends_on),
                 "cluster": request.cluster_id},
    )
    quota_request_notify(request_id=request.pk, event="approved")
    quota_request_webhook(request=request)
    return request


@transaction.atomic
def quota_request_reject(*, request_id: int, approver, reason: str) -> QuotaRequest:
    _decider(approver)
    if not reason.strip():
        raise ValidationError({"reason": ["Tell the tenant why: the reason is mailed to them."]})
    request = QuotaRequest.objects.select_related("tenant").get(pk=request_id)
    request.move_to(
        QuotaRequest.Status.REJECTED,
        decided_by=approver,
        decided_at=timezone.now(),
        decision_note=reason.strip(),
    )
    _record_unchanged_quota(request)
    audit(
        actor=approver,
        action="quota_request.reject",
        obj=request,
        tenant=request.tenant,
        changes={"reason": reason.strip()},
    )
    quota_request_notify(request_id=request.pk, event="rejected")
    quota_request_webhook(request=request)
    return request


def _may_withdraw(user, request: QuotaRequest) -> bool:
    access = access_for(user)
    return (
        access.platform_admin
        or request.requested_by_id == user.pk
        or access.tenant_roles.get(request.tenant_id) == Membership.Role.OWNER
    )


def can_withdraw(user, request: QuotaRequest) -> bool:
    return request.status == QuotaRequest.Status.SUBMITTED and _may_withdraw(user, request)


@transaction.atomic
def quota_request_withdraw(*, request_id: int, actor) -> QuotaRequest:
    """The requester (or an owner of the tenant) takes back a request not yet decided."""
    request = QuotaRequest.objects.select_related("tenant").get(pk=request_id)
    if not _may_withdraw(actor, request):
        raise PermissionDenied("Only the requester or a tenant owner withdraws a request.")
    request.move_to(QuotaRequest.Status.WITHDRAWN)
    _record_unchanged_quota(request)
    audit(actor=actor, action="quota_request.withdraw", obj=request, tenant=request.tenant)
    return request


def _record_unchanged_quota(request: QuotaRequest) -> None:
    """Keep the quota as it stood when the request was closed without a grant: the record of
    the decision shows it, whatever the quota becomes later."""
    limits = dict(
        Quota.objects.filter(tenant_id=request.tenant_id, cluster_id=request.cluster_id)
        .values_list("resource", "limit")
    )
    lines = list(request.lines.all())
    for line in lines:
        line.limit_before = line.limit_after = limits.get(line.resource, 0)
    QuotaRequestLine.objects.bulk_update(lines, ["limit_before", "limit_after"])


def _iso(day: datetime.date | None) -> str | None:
    return day.isoformat() if day else None


@transaction.atomic
def quota_grant_end(*, request_id: int) -> QuotaRequest:
    """A temporary grant's end date has passed: take back what it added (never below 0)."""
    request = QuotaRequest.objects.select_related("tenant").get(pk=request_id)
    request.move_to(QuotaRequest.Status.EXPIRED, ended_at=timezone.now())
    tenant = Tenant.objects.select_for_update().get(pk=request.tenant_id)
    quotas = {q.resource: q for q in Quota.objects.select_for_update().filter(
        tenant=tenant, cluster_id=request.cluster_id)}
    changes = {}
    for line in request.lines.all():
        quota = quotas.get(line.resource)
        if quota is None or not line.granted:
            continue
        before = quota.limit
        quota.limit, quota.updated_at = max(0, before - line.granted), timezone.now()
        quota.save(update_fields=["limit", "updated_at"])
        changes[line.resource] = {"limit": [before, quota.limit]}
    tenant_mark_changed(tenants=[tenant])
    audit(
        actor=None,
        action="quota_request.ended",
        obj=request,
        tenant=tenant,
        changes={"ends_on": _iso(request.ends_on), "lines": changes},
    )
    quota_request_notify(request_id=request.pk, event="ended")
    return request


def quota_grants_end_due(*, today: datetime.date | None = None) -> list[int]:
    """End every applied grant whose end date has passed (each in its own transaction)."""
    today = today or timezone.localdate()
    due = QuotaRequest.objects.filter(
        status=QuotaRequest.Status.APPLIED, ends_on__lt=today
    ).values_list("pk", flat=True)
    return [quota_grant_end(request_id=pk).pk for pk in list(due)]


def quota_grants_remind(*, today: datetime.date | None = None) -> list[int]:
    """Tell tenants once that a temporary grant ends within QUOTA_GRANT_REMINDER_DAYS."""
    today = today or timezone.localdate()
    horizon = today + datetime.timedelta(days=settings.QUOTA_GRANT_REMINDER_DAYS)
    due = QuotaRequest.objects.filter(
        status=QuotaRequest.Status.APPLIED,
        ends_on__isnull=False,
        ends_on__gte=today,
        ends_on__lte=horizon,
        reminded_at__isnull=True,
    ).values_list("pk", flat=True)
    reminded = []
    for pk in list(due):
        with transaction.atomic():
            # Conditional: a second sweep running at the same time does not mail twice.
            if QuotaRequest.objects.filter(pk=pk, reminded_at__isnull=True).update(
                reminded_at=timezone.now()
            ):
                request = QuotaRequest.objects.select_related("tenant").get(pk=pk)
                audit(
                    actor=None,
                    action="quota_request.reminded",
                    obj=request,
                    tenant=request.tenant,
                    changes={"ends_on": _iso(request.ends_on)},
                )
                quota_request_notify(request_id=pk, event="ending_soon")
                reminded.append(pk)
    return reminded


# --- grants set directly by platform admins ------------------------------------------------


@transaction.atomic
def quota_set(
    *,
    actor: Any | None,
    tenant: Tenant,
    resource: str,
    limit: int,
    borrowing_limit: int | None = None,
    lending_limit: int | None = None,
    cluster: str | None = None,
) -> Quota:
    """Set the granted amount of `resource` for `tenant` on `cluster` (None: fleet-wide); the
    resource class must exist, and the cluster be in service."""
    resource_classes.parse(resource)
    try:
        quota_rules.check_cluster(cluster=cluster)
    except ValidationError as exc:
        raise ValidationError({"cluster": exc.messages}) from None
    quota = Quota.objects.select_for_update().filter(
        tenant=tenant, cluster_id=cluster, resource=resource).first()
    before = (quota.limit, quota.borrowing_limit, quota.lending_limit) if quota else (0, None, None)
    if quota is None:
        quota = Quota(tenant=tenant, cluster_id=cluster, resource=resource, limit=limit)
    quota.limit, quota.updated_at = limit, timezone.now()
    quota.borrowing_limit, quota.lending_limit = borrowing_limit, lending_limit
    quota.full_clean()
    quota.save()
    after = (limit, borrowing_limit, lending_limit)
    if before != after:
        audit(
            actor=actor,
            action="quota.set",
            obj=quota,
            tenant=tenant,
            changes={
                "resource": resource,
                "cluster": cluster,
                "limit": [before[0], limit],
                "borrowing_limit": [before[1], borrowing_limit],
                "lending_limit": [before[2], lending_limit],
            },
        )
        tenant_mark_changed(tenants=[tenant])
    return quota


@transaction.atomic
def quota_remove(*, actor: Any | None, quota: Quota) -> None:
    """Take a resource class away from a tenant: on the cluster its quota becomes 0."""
    audit(
        actor=actor,
        action="quota.remove",
        obj=quota,
        tenant=quota.tenant,
        changes={"resource": quota.resource, "cluster": quota.cluster_id,
                 "limit": [quota.limit, 0]},
    )
    quota.delete()
    tenant_mark_changed(tenants=[quota.tenant])
