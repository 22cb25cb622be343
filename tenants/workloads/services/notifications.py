"""Mail about a workload to the person who launched it: when it first becomes ready, and when
it fails (with the cluster's reason). Kept in the outbox with the change it reports.

`workload_mail` is the shape every such mail has (the idle policies' too): what happened, then
the workload's page, then the portal's signature."""

from collections.abc import Iterable

from django.conf import settings
from django.urls import reverse

from core.outbox import email_enqueue

from ...webhooks.services import webhook_event_emit
from ..models import Workload, WorkloadStatus

SIGNATURE = "— AI Factory Portal"

SUBJECTS = {
    WorkloadStatus.READY: "{kind} {name} of {tenant} is ready",
    WorkloadStatus.FAILED: "{kind} {name} of {tenant} failed",
}


def workload_notify(*, workload: Workload, event: str) -> bool:
    person = workload.launched_by
    if event not in SUBJECTS or person is None or not person.email or not person.is_active:
        return False
    tenant = workload.tenant
    subject = SUBJECTS[event].format(kind=workload.kind_label, name=workload.name,
                                     tenant=tenant.name)
    lines = [f"Hello {person.get_full_name() or person.get_username()},", ""]
    if event == WorkloadStatus.READY:
        lines.append(f"Your {workload.kind_label} {workload.name} in {tenant.name} is "
                     "ready. Its page shows how to connect to it:")
    else:
        lines += [f"Your {workload.kind_label} {workload.name} in {tenant.name} failed.",
                  "", f"The cluster says: {workload.status_reason}"
                  + (f" — {workload.status_message}" if workload.status_message else ""), "",
                  "Its page has the whole timeline; fix the spec or delete it there:"]
    return workload_mail(workload=workload, to=[person.email], subject=subject, lines=lines,
                         topic=f"workload.{event}")


def launcher_email(workload: Workload) -> list[str]:
    """Who launched it, while they can still be written to (active, with an address)."""
    person = workload.launched_by
    return [person.email] if person is not None and person.is_active and person.email else []


def workload_mail(*, workload: Workload, to: Iterable[str], subject: str, lines: list[str],
                  topic: str) -> bool:
    """Keep a mail about `workload` for sending after commit: `lines`, then its page's address
    and the signature. False when nobody is addressed."""
    path = reverse("tenants:workload-detail", args=[workload.tenant.slug, workload.pk])
    body = "\n".join([*lines, f"{settings.PORTAL_URL}{path}", "", SIGNATURE])
    return email_enqueue(to=to, subject=subject, body=body, topic=topic) is not None


def workload_webhook(*, workload: Workload, event_type: str, **data) -> None:
    """Tell the hooks that hear about `event_type` (workload.ready, ...) about `workload`:
    call inside the transaction of what happened."""
    path = reverse("tenants:workload-detail", args=[workload.tenant.slug, workload.pk])
    webhook_event_emit(event_type=event_type, tenant=workload.tenant, data={
        "workload": {"id": workload.pk, "name": workload.name, "kind": workload.kind_label,
                     "status": workload.status},
        **data, "url": f"{settings.PORTAL_URL}{path}"})
