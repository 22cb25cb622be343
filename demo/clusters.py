"""The demo's two clusters, one per site, each a simulated fleet of its own.

The default cluster ("main", which every install has) is Amsterdam's: it keeps its slug, so
that what still acts on the default cluster only (the tenants' reconcile and the usage it
records, model credentials, the jobs sent straight to the tenants' queues) acts where Kueue's
borrowing and reclaim play (Amsterdam has the L40S nodes and the A100 MIG ones they need).
Frankfurt's cluster is added beside it; each node belongs to its site's cluster, and the demo's
workloads are spread over both (Helix's on Frankfurt, where its reserved H200 nodes are).
"""

from core.fleet import get_gateway
from inventory.models import DEFAULT_CLUSTER, Cluster, Site
from tenants.enforcement.manifests import tenant_manifests
from tenants.enforcement.services import tenant_spec
from tenants.models import Tenant, Workload

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


def workload_place(*, workload_id: int, cluster: str) -> None:
    """Put a workload the demo just launched on `cluster`, before anything is applied for it
    (the launch puts every workload on the default cluster until placement picks one)."""
    Workload.objects.filter(pk=workload_id).update(cluster=cluster)


def tenants_on_other_clusters() -> None:
    """The tenants' namespaces, quota objects, queues and RoleBindings on every demo cluster
    besides the default one, which `tenant_reconcile` alone looks after for now. A stand-in for
    the per-cluster tenant reconcile: the same manifests, applied (idempotently) and nothing
    recorded."""
    specs = [tenant_spec(tenant=tenant) for tenant in Tenant.objects.order_by("pk")]
    for slug, *_ in CLUSTERS:
        if slug == DEFAULT_CLUSTER:
            continue
        gateway = get_gateway(slug)
        for spec in specs:
            gateway.apply(manifests=tenant_manifests(spec))
