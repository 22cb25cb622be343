"""A change to what a tenant's cluster objects should be: bump its desired version, reconcile.

The one entry every writer calls (quota decisions, tenant edits), inside its own transaction;
it knows the task only by name, so writers need not import the reconcile (which reads them).
Queued without a cluster, the task fans out to one reconcile per cluster the tenant is on (or
must leave), each on its cluster's queue (`tenants.enforcement.tasks`).
"""

from collections.abc import Iterable

from core.queueing import enqueue_on_commit
from core.reconcile import reconcile_bump

from .models import Tenant

RECONCILE_TENANT = "tenants.enforcement.tasks.tenant_reconcile_task"


def tenant_mark_changed(*, tenants: Iterable[Tenant], peers: bool = True) -> dict[int, int]:
    """Bump desired_version of `tenants` (and their cohort peers, unless the change is one they
    do not see, `peers=False`: an endpoint's queues); reconcile each after commit.

    Call inside the transaction that changed the desired state. Returns the new versions.
    """
    tenants = list(tenants)
    ids = {t.pk for t in tenants}
    cohorts = {t.cohort for t in tenants if t.cohort and peers}
    if cohorts:
        # A cohort member's quota is what its peers may borrow: their ceilings change too.
        ids |= set(Tenant.objects.filter(cohort__in=cohorts).values_list("pk", flat=True))
    versions = reconcile_bump(Tenant.objects.filter(pk__in=ids))
    for tenant_id in sorted(ids):
        enqueue_on_commit(RECONCILE_TENANT, tenant_id)
    return versions
