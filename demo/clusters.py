"""The demo's two clusters, one per site, each a simulated fleet of its own.

The default cluster ("main", which every install has) is Amsterdam's: it keeps its slug, and
the jobs the demo sends straight to the tenants' queues go there, where Kueue's borrowing and
reclaim play (Amsterdam has the L40S nodes and the A100 MIG ones they need). Frankfurt's
cluster is added beside it; each node belongs to its site's cluster, the tenants' quota is
fleet-wide (so each tenant is on both), and the demo's workloads are launched on either
(Helix's on Frankfurt, where its reserved H200 nodes are).
"""

from datetime import timedelta

from django.utils import timezone

from core.models import SimulatedObject
from inventory.models import DEFAULT_CLUSTER, Cluster, Site
from tenants.enforcement.presence import reconcile_targets
from tenants.enforcement.services import tenant_reconcile
from tenants.models import Tenant

FRANKFURT = "fra1"
# (cluster slug, name, site slug, API server shown on the pages)
CLUSTERS = (
    (DEFAULT_CLUSTER, "Amsterdam 1", "ams1", "https://k8s.ams1.example.com:6443"),
    (FRANKFURT, "Frankfurt 1", "fra1", "https://k8s.fra1.example.com:6443"),
)


def clusters_load() -> dict[str, str]:
    """The demo's clusters (the default one renamed after its site, the other added); returns
    each site's cluster, by site slug."""
    sites = {site.slug: site for site in Site.objects.filter(slug__in=[c[2] for c in CLUSTERS])}
    for slug, name, site, api_server in CLUSTERS:
        cluster, created = Cluster.objects.get_or_create(
            slug=slug, defaults={"name": name, "site": sites[site], "api_server": api_server}
        )
        if not created and cluster.site_id is None:  # the default cluster, as migrations made it
            cluster.name, cluster.site, cluster.api_server = name, sites[site], api_server
            cluster.save(update_fields=["name", "site", "api_server"])
    return {site: slug for slug, _, site, _ in CLUSTERS}


def tenants_on_their_clusters() -> None:
    """Each tenant reconciled now on every cluster it is on, twice: the first pass applies,
    the second is the periodic sweep's (it reads every object back for drift, which has the
    simulated controllers report their status), so that what the rest of the load reads is
    settled, and a second load finds nothing to change."""
    ids = list(Tenant.objects.order_by("pk").values_list("pk", flat=True))
    for sweep in (False, True):
        if sweep:
            _queues_settled()
        for tenant_id, cluster in reconcile_targets(ids):
            tenant_reconcile(tenant_id=tenant_id, cluster=cluster)


def _queues_settled() -> None:
    """The Kueue queues just applied (the tenants', their endpoints'), dated as if applied long
    ago: a real Kueue has them active by the time anyone looks, and so the sweep's read finds
    them, whether a load takes more or less than the simulated controllers' delay."""
    long_ago = timezone.now() - timedelta(minutes=10)
    SimulatedObject.objects.filter(
        api_version__startswith="kueue.x-k8s.io/", kind__in=("ClusterQueue", "LocalQueue"),
        updated_at__gt=long_ago,
    ).update(created_at=long_ago, updated_at=long_ago)
