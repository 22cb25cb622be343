"""What a decision on a quota request did: who closed it, when, why, and what it did to the
quota at that moment (the record the request's page and the admin show)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from core.models import AuditEvent

from .models import QuotaRequest


@dataclass(frozen=True)
class DecisionLine:
    resource: str
    label: str
    asked: int
    granted: int
    limit_before: int | None  # as recorded when the request was decided; None: not recorded
    limit_after: int | None


@dataclass(frozen=True)
class Decision:
    """Who closed a request, when, why, and what it did to the quota at that moment."""

    status: str
    status_label: str
    by: str
    at: datetime.datetime | None
    note: str
    lines: list[DecisionLine]


def quota_request_decision(*, request: QuotaRequest) -> Decision | None:
    """The recorded decision on `request` (None while it waits for one). Two queries at most."""
    if request.status == QuotaRequest.Status.SUBMITTED:
        return None
    by, at = "", request.decided_at
    if request.decided_by is not None:
        username, full_name = request.decided_by.get_username(), request.decided_by.get_full_name()
        by = f"{full_name} ({username})" if full_name else username
    if request.status == QuotaRequest.Status.WITHDRAWN:
        # A withdrawal is the requester's, not a decision: the audit trail says who and when.
        event = (
            AuditEvent.objects.filter(
                action="quota_request.withdraw",
                object_type=QuotaRequest._meta.label_lower,
                object_id=str(request.pk),
            )
            .order_by("-created_at")
            .first()
        )
        if event is not None:
            by, at = event.actor_repr, event.created_at
    closed_without_grant = request.status in {
        QuotaRequest.Status.REJECTED,
        QuotaRequest.Status.WITHDRAWN,
    }
    lines = [
        DecisionLine(
            resource=line.resource,
            label=line.resource_label,
            asked=line.amount,
            granted=0 if closed_without_grant else line.granted,
            limit_before=line.limit_before,
            limit_after=line.limit_after,
        )
        for line in request.lines.all()
    ]
    return Decision(
        status=request.status,
        # The decision itself, whatever became of it since (applied, failed, ended).
        status_label={
            QuotaRequest.Status.REJECTED: "Rejected",
            QuotaRequest.Status.WITHDRAWN: "Withdrawn",
        }.get(request.status, "Approved"),
        by=by,
        at=at,
        note=request.decision_note,
        lines=lines,
    )
