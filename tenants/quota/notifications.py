"""Mail about quota requests: each decision goes to the requester and the tenant's owners.

Called inside the transaction of the decision: the mail is kept in the outbox with it and sent
after commit, so a broker or mail server that is down delays it but never loses it.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse

from core.outbox import email_enqueue

from ..access.models import Membership, RoleAssignment
from ..webhooks.services import webhook_event_emit
from .models import QuotaRequest

SUBJECTS = {
    "submitted": "Quota request #{id} from {tenant} is waiting for a decision",
    "approved": "Quota request #{id} for {tenant} was approved",
    "rejected": "Quota request #{id} for {tenant} was rejected",
    "applied": "Quota request #{id} for {tenant} is now enforced on the cluster",
    "ending_soon": "Temporary quota of {tenant} ends on {ends_on}",
    "ended": "Temporary quota of {tenant} has ended",
}


def _tenant_people(request: QuotaRequest) -> list[str]:
    owners = Membership.objects.filter(
        tenant_id=request.tenant_id, role=Membership.Role.OWNER
    ).values_list("user__email", flat=True)
    people = [request.requested_by.email if request.requested_by else "", *owners]
    return people


def _platform_admins() -> list[str]:
    return list(
        get_user_model()
        .objects.filter(
            Q(is_superuser=True) | Q(platform_roles__role=RoleAssignment.Role.PLATFORM_ADMIN),
            is_active=True,
        )
        .values_list("email", flat=True)
        .distinct()
    )


def quota_request_notify(*, request_id: int, event: str) -> int:
    """Keep a mail about `event` for whom it concerns; returns how many are addressed."""
    request = (
        QuotaRequest.objects.select_related("tenant", "requested_by", "decided_by")
        .prefetch_related("lines")
        .filter(pk=request_id)
        .first()
    )
    if request is None or event not in SUBJECTS:
        return 0
    people = _platform_admins() if event == "submitted" else _tenant_people(request)
    recipients = sorted({email for email in people if email})
    if not recipients:
        return 0
    subject = SUBJECTS[event].format(
        id=request.pk, tenant=request.tenant.name, ends_on=request.ends_on
    )
    path = (
        reverse("admin:tenants_quotarequest_change", args=[request.pk])
        if event == "submitted"
        else reverse("tenants:quota-request-detail", args=[request.tenant.slug, request.pk])
    )
    body = render_to_string(
        "tenants/email/quota_request.txt",
        {
            "request": request,
            "event": event,
            "path": f"{settings.PORTAL_URL}{path}",
            "lines": request.lines.all(),
        },
    )
    email_enqueue(to=recipients, subject=subject, body=body, topic=f"quota_request.{event}")
    return len(recipients)


def quota_request_webhook(*, request: QuotaRequest) -> None:
    """Tell the hooks that hear about quota decisions that `request` was approved or rejected:
    call inside the transaction of the decision."""
    path = reverse("tenants:quota-request-detail", args=[request.tenant.slug, request.pk])
    decided_by = request.decided_by.get_username() if request.decided_by else None
    lines = [{"resource": line.resource, "asked": line.amount, "granted": line.granted}
             for line in request.lines.all()]
    webhook_event_emit(event_type="quota_request.decided", tenant=request.tenant, data={
        "quota_request": {"id": request.pk, "status": request.status,
                          "note": request.decision_note, "decided_by": decided_by,
                          "lines": lines},
        "url": f"{settings.PORTAL_URL}{path}"})
