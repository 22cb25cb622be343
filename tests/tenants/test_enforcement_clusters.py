"""A tenant on two clusters: its objects reconciled on each, independently, against two
Kubernetes API emulators at once over HTTP."""

import re

import pytest

from core.fleet import TransientFleetError, gateway_override
from core.fleet.kubernetes import KubernetesFleetGateway
from core.models import AuditEvent
from inventory.models import Cluster
from tenants.enforcement.manifests import KUEUE, tenant_manifests
from tenants.enforcement.presence import tenant_presence
from tenants.enforcement.services import tenant_reconcile, tenant_spec, tenants_reconcile_sweep
from tenants.models import Quota, QuotaRequest, TenantCluster
from tenants.quota import services as quota_requests
from tests.factories import QuotaFactory
from tests.support.kube_emulator import running_kube_emulator

from .kube_schemas import assert_valid

pytestmark = pytest.mark.django_db

S = QuotaRequest.Status
NS = "tenant-acme"
RQ_PATH = f"/api/v1/namespaces/{NS}/resourcequotas/tenant-quota"
H100 = "gpu:nvidia-h100-80gb"


@pytest.fixture
def two_clusters(db, tmp_path):
    """Clusters main and b, each an emulator of its own behind its own real gateway."""
    Cluster.objects.create(slug="b", name="Hall B")
    with running_kube_emulator() as main, running_kube_emulator() as b:
        gateways = {
            slug: KubernetesFleetGateway(
                api_client=emulator.api_client(), request_timeout=2.0,
                discovery_cache_file=str(tmp_path / f"discovery-{slug}.json"),
            )
            for slug, emulator in (("main", main), ("b", b))
        }
        with gateway_override(gateways):
            yield {"main": main, "b": b}
        for gateway in gateways.values():
            gateway.api_client.close()


@pytest.fixture
def spread(tenant):
    """Acme: 4 H100s on main, 2 on b, 1 anywhere; 16 vCPUs anywhere."""
    return [
        QuotaFactory(tenant=tenant, cluster_id="main", resource=H100, limit=4),
        QuotaFactory(tenant=tenant, cluster_id="b", resource=H100, limit=2),
        QuotaFactory(tenant=tenant, resource=H100, limit=1),
        QuotaFactory(tenant=tenant, resource="cpu", limit=16),
    ]


def _hard(emulator) -> dict:
    quota = emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    return quota["spec"]["hard"]


def _nominal(emulator) -> str:
    queue = emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")
    return next(
        r["nominalQuota"]
        for group in queue["spec"]["resourceGroups"]
        for flavor in group["flavors"] if flavor["name"] == "gpu-nvidia-h100-80gb"
        for r in flavor["resources"] if r["name"] == "nvidia.com/gpu"
    )


def test_the_tenant_lands_on_both_clusters_with_each_ones_quota(
    tenant, spread, two_clusters, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert tenants_reconcile_sweep() == [(tenant.pk, "b"), (tenant.pk, "main")]

    for slug, gpus in (("main", "5"), ("b", "3")):
        emulator = two_clusters[slug]
        assert emulator.get_object("v1", "Namespace", NS) is not None, slug
        hard = _hard(emulator)
        assert hard["requests.nvidia.com/gpu"] == gpus, slug
        assert hard["requests.cpu"] == "16", slug
        assert _nominal(emulator) == gpus, slug
        assert_valid(tenant_manifests(tenant_spec(tenant=tenant, cluster=slug)))
    rows = TenantCluster.objects.filter(tenant=tenant).order_by("cluster_id")
    assert [(r.cluster_id, r.applied_version, r.reconcile_error) for r in rows] == [
        ("b", tenant.desired_version, ""), ("main", tenant.desired_version, "")]
    tenant.refresh_from_db()
    assert tenant.in_sync

    # What each cluster reports in use lands on its row; the grants show the fleet's sum.
    for slug, used in (("main", "3"), ("b", "2")):
        quota = two_clusters[slug].get_object("v1", "ResourceQuota", "tenant-quota", NS)
        two_clusters[slug].put_object({**quota, "status": {
            "hard": quota["spec"]["hard"], "used": {"requests.cpu": used}}})
        tenant_reconcile(tenant_id=tenant.pk, cluster=slug)
    assert TenantCluster.objects.get(tenant=tenant, cluster="b").observed["cpu"]["in_use"] == 2
    assert Quota.objects.get(tenant=tenant, resource="cpu").in_use == 5


def test_one_cluster_failing_leaves_the_other_applied_and_names_itself(
    tenant, spread, two_clusters, tenant_member, platform_admin,
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        tenants_reconcile_sweep()
    asks = {}
    for where in ("main", None):
        request = quota_requests.quota_request_create(
            tenant=tenant, requested_by=tenant_member, lines=[{"resource": "cpu", "amount": 8}],
            justification="More data loaders.", cluster=where,
        )
        with django_capture_on_commit_callbacks():  # reconciled below, cluster by cluster
            quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
        asks[where] = request
    two_clusters["b"].fail(503, method="PATCH", path=RQ_PATH, times=1)

    tenant_reconcile(tenant_id=tenant.pk, cluster="main")
    with pytest.raises(TransientFleetError):
        tenant_reconcile(tenant_id=tenant.pk, cluster="b")

    assert _hard(two_clusters["main"])["requests.cpu"] == "32"  # 16 + 8 anywhere + 8 on main
    assert _hard(two_clusters["b"])["requests.cpu"] == "16"  # not yet: it failed there
    main, b = (TenantCluster.objects.get(tenant=tenant, cluster=c) for c in ("main", "b"))
    tenant.refresh_from_db()
    assert main.reconcile_error == "" and main.applied_version == tenant.desired_version
    assert b.reconcile_error and b.applied_version < main.applied_version
    assert tenant.reconcile_error.startswith("On cluster b: ")
    assert not tenant.in_sync
    for request in asks.values():
        request.refresh_from_db()
    # Granted on main: applied there. Granted anywhere: waits for b, with b's error.
    assert asks["main"].status == S.APPLIED
    assert asks[None].status == S.FAILED and asks[None].last_error.startswith("On cluster b: ")
    failed = AuditEvent.objects.get(action="tenant.apply_failed")
    assert failed.changes["cluster"] == "b" and failed.changes["transient"] is True
    states = {p.cluster: (p.state, p.error) for p in tenant_presence(tenant)}
    assert states["main"] == ("applied", "") and states["b"][0] == "failing"

    tenant_reconcile(tenant_id=tenant.pk, cluster="b")  # the retry: the fault is over
    assert _hard(two_clusters["b"])["requests.cpu"] == "24"
    asks[None].refresh_from_db()
    assert asks[None].status == S.APPLIED
    tenant.refresh_from_db()
    assert tenant.in_sync and tenant.reconcile_error == ""


def test_a_stopped_cluster_fails_alone(tenant, spread, two_clusters):
    tenant_reconcile(tenant_id=tenant.pk, cluster="main")
    two_clusters["b"].stop()

    with pytest.raises(TransientFleetError):
        tenant_reconcile(tenant_id=tenant.pk, cluster="b")
    tenant_reconcile(tenant_id=tenant.pk, cluster="main", force=True)

    assert TenantCluster.objects.get(tenant=tenant, cluster="main").reconcile_error == ""
    assert TenantCluster.objects.get(tenant=tenant, cluster="b").reconcile_error


def test_a_cluster_the_tenant_leaves_has_its_objects_removed(
    tenant, spread, two_clusters, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        tenants_reconcile_sweep()
    # Its quota moves away from b: only main's grant remains.
    Quota.objects.filter(tenant=tenant).exclude(cluster_id="main").delete()

    with django_capture_on_commit_callbacks(execute=True):
        assert (tenant.pk, "b") in tenants_reconcile_sweep()  # still there: to remove it

    assert two_clusters["b"].get_object("v1", "Namespace", NS) is None
    assert two_clusters["b"].get_object(KUEUE, "ClusterQueue", "tenant-acme") is None
    # Flavors are every tenant's: they stay.
    assert two_clusters["b"].get_object(KUEUE, "ResourceFlavor", "portal-default") is not None
    assert two_clusters["main"].get_object("v1", "Namespace", NS) is not None
    assert list(TenantCluster.objects.filter(tenant=tenant).values_list("cluster_id",
                                                                         flat=True)) == ["main"]
    assert AuditEvent.objects.get(action="tenant.withdrawn").changes["cluster"] == "b"
    # Level-triggered: once gone, nothing more to do there.
    assert tenants_reconcile_sweep() == [(tenant.pk, "main")]


def test_a_change_to_the_tenant_queues_a_reconcile_on_each_of_its_clusters(
    tenant, spread, two_clusters, django_capture_on_commit_callbacks
):
    from tenants.enforcement.tasks import tenant_reconcile_task

    with django_capture_on_commit_callbacks(execute=True):
        fanned = tenant_reconcile_task.apply(args=(tenant.pk,)).get()

    assert fanned == {"tenant": tenant.pk, "clusters": ["b", "main"]}
    for emulator in two_clusters.values():
        assert emulator.get_object("v1", "Namespace", NS) is not None


def test_model_credentials_reach_the_namespace_on_each_cluster(
    tenant, spread, tenant_member, two_clusters, django_capture_on_commit_callbacks
):
    from tenants.credentials import services as credentials
    from tenants.credentials.models import ModelCredential

    with django_capture_on_commit_callbacks(execute=True):
        tenants_reconcile_sweep()
    with django_capture_on_commit_callbacks():  # reconciled below, cluster by cluster
        credentials.credential_create(actor=tenant_member, tenant=tenant, name="hf-token",
                                      kind="huggingface",
                                      values={"token": "hf_SuperSecretTokenValue1234567890abc"})
    two_clusters["b"].fail(503, method="PATCH", path=re.compile(f"/api/v1/namespaces/{NS}/"
                                                                 "secrets/.*"), times=1)
    credentials.credentials_reconcile(tenant_id=tenant.pk, cluster="main")
    with pytest.raises(TransientFleetError):
        credentials.credentials_reconcile(tenant_id=tenant.pk, cluster="b")

    assert two_clusters["main"].get_object("v1", "Secret", "model-cred-hf-token", NS)
    assert two_clusters["b"].get_object("v1", "Secret", "model-cred-hf-token", NS) is None
    credential = ModelCredential.objects.get()
    assert "On cluster b: " in credential.reconcile_error
    assert "hf_SuperSecret" not in credential.reconcile_error

    credentials.credentials_reconcile(tenant_id=tenant.pk, cluster="b")  # the retry
    assert two_clusters["b"].get_object("v1", "Secret", "model-cred-hf-token", NS)
