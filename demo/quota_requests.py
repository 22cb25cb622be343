"""The demo's quota requests, one or more in each state, and the cohort its shared tenants
share (deterministic: loading twice changes nothing)."""

import datetime

from django.utils import timezone

from tenants.access import services as tenant_services
from tenants.models import QuotaRequest, Tenant
from tenants.quota import services as tenant_quota

COHORT = ("shared-pool", ("nova", "atlas", "orbit"))
# (tenant, requester, lines, justification, days old, ends in days, outcome, decision note)
QUOTA_REQUESTS = (
    ("nova", "mike", {"gpu:nvidia-h100-80gb": 4},
     "Second vLLM replica for the support assistant: p95 latency is over target at peak.",
     12, None, "approve", "Approved for the launch."),
    ("atlas", "ari", {"mig:nvidia-a100-80gb:1g.10gb": 7},
     "Nightly eval sweep over 40 checkpoints; small slices are enough.",
     9, 20, "approve", "Temporary, until the sweep is done."),
    ("orbit", "olga", {"gpu:nvidia-a100-80gb": 16},
     "LoRA fine-tuning backlog of 30 customer adapters.",
     6, None, "reject", "No A100s free this quarter; ask again after the H200 expansion."),
    ("atlas", "ari", {"count:vm": 2}, "Two VMs for the red-team tooling.", 4, None, "withdraw", ""),
    ("helix", "olivia", {"gpu:nvidia-h200": 8, "storage-gib": 20000},
     "Pre-training run of the 34B model needs one more H200 node for six weeks.",
     2, 42, "submit", ""),
    ("nova", "mike", {"gpu:nvidia-l40s": 8, "cpu": 64},
     "Embedding service for the new search index.", 0, None, "submit", ""),
)


def quota_requests_load(users: dict) -> None:
    """A few requests in each state, so the review queue and the dashboards look alive."""
    if QuotaRequest.objects.exists():
        return
    cohort, members = COHORT
    for tenant in Tenant.objects.filter(slug__in=members, cohort=""):
        tenant.cohort = cohort
        tenant_services.tenant_update(actor=None, tenant=tenant, changed=["cohort"])
    admin, now = users["adam"], timezone.now()
    for slug, who, lines, why, age, ends_in, outcome, note in QUOTA_REQUESTS:
        ends_on = timezone.localdate() + datetime.timedelta(days=ends_in) if ends_in else None
        request = tenant_quota.quota_request_create(
            tenant=Tenant.objects.get(slug=slug),
            requested_by=users[who],
            lines=[{"resource": r, "amount": a} for r, a in lines.items()],
            justification=why,
            ends_on=ends_on,
        )
        QuotaRequest.objects.filter(pk=request.pk).update(
            created_at=now - datetime.timedelta(days=age, hours=3)
        )
        if outcome == "approve":
            tenant_quota.quota_request_approve(
                request_id=request.pk, approver=admin, note=note
            )
        elif outcome == "reject":
            tenant_quota.quota_request_reject(
                request_id=request.pk, approver=admin, reason=note
            )
        elif outcome == "withdraw":
            tenant_quota.quota_request_withdraw(request_id=request.pk, actor=users[who])
