"""Mail about a workload to the person who launched it: when it first becomes ready, and when
it fails (with the cluster's reason). Kept in the outbox with the change it reports."""

from django.conf import settings
from django.urls import reverse

from core.outbox import email_enqueue

from ..models import Workload, WorkloadStatus

SUBJECTS = {
    WorkloadStatus.READY: "{kind} {name} of {tenant} is ready",
    WorkloadStatus.FAILED: "{kind} {name} of {tenant} failed",
}


def workload_notify(*, workload: Workload, event: str) -> bool:
    person = workload.launched_by
    if event not in SUBJECTS or person is None or not person.email or not person.is_active:
        return False
    tenant = workload.tenant
    path = reverse("tenants:workload-detail", args=[tenant.slug, workload.pk])
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
    lines += [f"{settings.PORTAL_URL}{path}", "", "— AI Factory Portal"]
    return email_enqueue(to=[person.email], subject=subject, body="\n".join(lines),
                         topic=f"workload.{event}") is not None
