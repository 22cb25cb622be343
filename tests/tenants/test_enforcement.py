"""Quota enforced on the cluster: applied through the real gateway to the Kubernetes API emulator,
read back and validated; drift corrected; cluster errors recorded and retried."""

import re

import pytest
from celery import current_app
from django.urls import reverse

from core.fleet import TransientFleetError
from core.models import AuditEvent, SimulatedObject
from tenants.access.changes import tenant_mark_changed
from tenants.enforcement.manifests import KUEUE, tenant_manifests
from tenants.enforcement.services import tenant_reconcile, tenant_spec, tenants_reconcile_sweep
from tenants.models import Quota, QuotaRequest, Tenant, TenantCluster
from tenants.quota import services as quota_requests
from tests.factories import QuotaFactory

from .kube_schemas import assert_valid, schema_errors

S = QuotaRequest.Status
NS = "tenant-acme"
RQ_PATH = f"/api/v1/namespaces/{NS}/resourcequotas/tenant-quota"
OBJECTS = [
    ("v1", "Namespace", NS, None),
    ("v1", "ResourceQuota", "tenant-quota", NS),
    ("v1", "LimitRange", "tenant-defaults", NS),
    ("networking.k8s.io/v1", "NetworkPolicy", "tenant-isolation", NS),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "tenant-edit", NS),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "tenant-view", NS),
    (KUEUE, "ResourceFlavor", "portal-default", None),
    (KUEUE, "ResourceFlavor", "gpu-nvidia-h100-80gb", None),
    (KUEUE, "ResourceFlavor", "gpu-passthrough", None),
    (KUEUE, "WorkloadPriorityClass", "portal-serving", None),
    (KUEUE, "WorkloadPriorityClass", "portal-interactive", None),
    (KUEUE, "WorkloadPriorityClass", "portal-batch", None),
    (KUEUE, "ClusterQueue", "tenant-acme", None),
    (KUEUE, "LocalQueue", "default", NS),
]
# Sent to the tenant's LocalQueue: the simulated Kueue counts them (bound already by the test,
# as the demo data's pods are: running, so admitted).
QUEUED = {"kueue.x-k8s.io/queue-name": "default"}
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def _read_back(emulator) -> list[dict]:
    objects = []
    for api_version, kind, name, namespace in OBJECTS:
        obj = emulator.get_object(api_version, kind, name, namespace)
        assert obj is not None, f"{kind} {name} is not on the cluster"
        objects.append(obj)
    return objects


def _approve(request, admin, capture, **kwargs):
    with capture(execute=True):
        quota_requests.quota_request_approve(request_id=request.pk, approver=admin, **kwargs)
    request.refresh_from_db()
    return request


@pytest.fixture
def approved_tenant(
    tenant,
    tenant_member,
    granted,
    submit,
    platform_admin,
    kube_gateway,
    kube_emulator,
    django_capture_on_commit_callbacks,
):
    """Acme with 8 H100s and 64 vCPUs, plus an approved request for 8 more H100s, applied."""
    request = _approve(
        submit({"gpu:nvidia-h100-80gb": 8}), platform_admin, django_capture_on_commit_callbacks
    )
    return request


def test_approved_quota_is_applied_read_back_and_valid_against_the_schemas(
    approved_tenant, kube_emulator, tenant
):
    request = approved_tenant
    assert request.status == S.APPLIED and request.applied_at is not None
    tenant.refresh_from_db()
    assert tenant.applied_at is not None and tenant.applied_version == tenant.desired_version
    assert tenant.reconcile_error == ""

    objects = _read_back(kube_emulator)
    assert_valid(objects)
    by_kind = {o["kind"]: o for o in objects}
    assert by_kind["ResourceQuota"]["spec"]["hard"]["requests.nvidia.com/gpu"] == "16"
    assert by_kind["ResourceQuota"]["spec"]["hard"]["requests.cpu"] == "64"
    gpu_flavor = by_kind["ClusterQueue"]["spec"]["resourceGroups"][1]["flavors"][0]
    assert gpu_flavor == {
        "name": "gpu-nvidia-h100-80gb",
        "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"}],
    }
    # A VM's H100s are passed through: a resource of their own, within the same grant.
    assert by_kind["ClusterQueue"]["spec"]["resourceGroups"][2]["flavors"] == [{
        "name": "gpu-passthrough",
        "resources": [{"name": "nvidia.com/GH100_H100_SXM5_80GB", "nominalQuota": "16"}],
    }]
    assert by_kind["Namespace"]["metadata"]["labels"]["portal.ai-factory.io/tenant"] == "acme"
    # Written with server-side apply, as one field manager.
    applies = [r for r in kube_emulator.requests("PATCH")]
    assert applies and all("apply-patch" in r.content_type for r in applies)
    assert all(r.params.get("fieldManager") == "ai-factory-portal" for r in applies)
    assert AuditEvent.objects.filter(action="tenant.applied", tenant_slug="acme").exists()
    assert AuditEvent.objects.filter(action="quota_request.applied").count() == 1
    # The portal's priorities, serving above interactive above batch; the queue preempts by them.
    values = [o["value"] for o in objects if o["kind"] == "WorkloadPriorityClass"]
    assert values == [1000, 500, 100]
    assert by_kind["ClusterQueue"]["spec"]["preemption"] == {"withinClusterQueue": "LowerPriority"}


def test_reconciling_again_changes_nothing_on_the_cluster(approved_tenant, kube_emulator, tenant):
    before = {o["kind"] + o["metadata"]["name"]: o for o in _read_back(kube_emulator)}
    tenant_reconcile(tenant_id=tenant.pk)
    tenant_reconcile(tenant_id=tenant.pk)
    after = {o["kind"] + o["metadata"]["name"]: o for o in _read_back(kube_emulator)}
    assert after == before  # not even a resourceVersion moved
    assert after["LocalQueuedefault"]["spec"] == {"clusterQueue": "tenant-acme"}
    assert not AuditEvent.objects.filter(action="tenant.drift_corrected").exists()


def test_the_sweep_corrects_drift_someone_made_on_the_cluster(
    approved_tenant, kube_emulator, tenant, django_capture_on_commit_callbacks
):
    quota = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    edited = {**quota, "spec": {"hard": {**quota["spec"]["hard"], "requests.nvidia.com/gpu": "64"}}}
    edited["metadata"] = {k: v for k, v in quota["metadata"].items() if k not in SERVER_FIELDS}
    kube_emulator.put_object(edited)
    queue = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")
    queue["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]["nominalQuota"] = "64"
    kube_emulator.put_object(queue)

    with django_capture_on_commit_callbacks(execute=True):
        assert tenants_reconcile_sweep() == [(tenant.pk, "main")]

    restored = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    assert restored["spec"]["hard"]["requests.nvidia.com/gpu"] == "16"
    queue = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")
    assert queue["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]["nominalQuota"] == "16"
    drift = AuditEvent.objects.get(action="tenant.drift_corrected")
    assert drift.changes == {
        f"ResourceQuota {NS}/tenant-quota": {
            "spec.hard.requests.nvidia.com/gpu": {"applied": "16", "found": "64"}
        },
        "ClusterQueue tenant-acme": {
            "spec.resourceGroups[1].flavors[0].resources[0].nominalQuota": {
                "applied": "16",
                "found": "64",
            }
        },
    }


def test_a_cluster_error_leaves_the_request_failed_with_the_error_and_the_sweep_retries_it(
    tenant,
    granted,
    submit,
    platform_admin,
    kube_gateway,
    kube_emulator,
    login,
    tenant_member,
    api_client,
    django_capture_on_commit_callbacks,
):
    request = submit({"gpu:nvidia-h100-80gb": 8})
    quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
    kube_emulator.fail(503, method="PATCH", path=RQ_PATH, message="etcdserver: request timed out")

    with pytest.raises(TransientFleetError):
        tenant_reconcile(tenant_id=tenant.pk)

    request.refresh_from_db()
    tenant.refresh_from_db()
    assert request.status == S.FAILED and request.attempts == 1
    assert "etcdserver: request timed out" in request.last_error
    assert "etcdserver: request timed out" in tenant.reconcile_error
    # The decision stands: the database still wants 16, the cluster has not got it.
    assert Quota.objects.get(resource="gpu:nvidia-h100-80gb").limit == 16
    assert AuditEvent.objects.filter(action="tenant.apply_failed").count() == 1
    page = login(tenant_member).get(reverse("tenants:dashboard", args=["acme"])).content.decode()
    assert "Not applied on the cluster" in page and "etcdserver: request timed out" in page
    api_client.force_login(tenant_member)
    body = api_client.get(f"/api/v1/quota-requests/{request.pk}/").json()
    assert body["status"] == "failed" and "etcdserver" in body["last_error"]
    assert api_client.get("/api/v1/tenants/acme/").json()["cluster"]["state"] == "failing"

    with django_capture_on_commit_callbacks(execute=True):
        tenants_reconcile_sweep()

    request.refresh_from_db()
    tenant.refresh_from_db()
    assert request.status == S.APPLIED and request.last_error == "" and request.attempts == 2
    assert tenant.reconcile_error == "" and tenant.reconcile_failures == 0
    quota = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "16"
    page = login(tenant_member).get(reverse("tenants:dashboard", args=["acme"])).content.decode()
    assert "Applied on the cluster at" in page


def test_the_reconcile_task_retries_transient_errors_with_backoff(
    tenant,
    granted,
    submit,
    platform_admin,
    kube_gateway,
    kube_emulator,
    monkeypatch,
):
    from tenants.enforcement.tasks import tenant_reconcile_task

    assert tenant_reconcile_task.autoretry_for == (TransientFleetError,)
    assert tenant_reconcile_task.retry_backoff and tenant_reconcile_task.max_retries == 8
    request = submit({"cpu": 8})
    quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
    kube_emulator.fail(503, method="PATCH", path=RQ_PATH, times=2)

    # Run as a worker would (errors not propagated): Celery retries, here without the wait.
    monkeypatch.setitem(current_app.conf, "task_eager_propagates", False)
    result = tenant_reconcile_task.apply(args=(tenant.pk, False, "main"))

    assert result.successful()
    request.refresh_from_db()
    # Two attempts failed and were recorded; the third went through.
    assert request.status == S.APPLIED and request.attempts == 3
    assert len(kube_emulator.requests("PATCH", RQ_PATH)) == 3
    assert AuditEvent.objects.filter(action="quota_request.failed").count() == 1
    assert AuditEvent.objects.filter(action="tenant.apply_failed").count() == 1


def test_a_permanent_refusal_is_recorded_without_a_retry_storm(
    tenant,
    granted,
    submit,
    platform_admin,
    kube_gateway,
    kube_emulator,
    django_capture_on_commit_callbacks,
):
    kube_emulator.fail(
        403, method="PATCH", path=RQ_PATH, message="resourcequotas is forbidden", times=5
    )
    request = _approve(submit({"cpu": 8}), platform_admin, django_capture_on_commit_callbacks)
    assert request.status == S.FAILED and "forbidden" in request.last_error
    assert len(kube_emulator.requests("PATCH", RQ_PATH)) == 1


def test_usage_reported_by_the_cluster_shows_next_to_the_quota(
    approved_tenant, kube_emulator, tenant, tenant_member, login
):
    quota = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    kube_emulator.put_object(
        {**quota, "status": {"hard": quota["spec"]["hard"], "used": {"requests.cpu": "12500m"}}}
    )
    queue = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")
    flavors_usage = [
        {"name": "gpu-nvidia-h100-80gb", "resources": [{"name": "nvidia.com/gpu", "total": "6"}]},
        # A VM's two H100s, passed through: the same class.
        {"name": "gpu-passthrough",
         "resources": [{"name": "nvidia.com/GH100_H100_SXM5_80GB", "total": "2"}]},
    ]
    kube_emulator.put_object({**queue, "status": {"flavorsUsage": flavors_usage}})

    tenant_reconcile(tenant_id=tenant.pk)

    used = dict(Quota.objects.filter(tenant=tenant).values_list("resource", "in_use"))
    assert used == {"gpu:nvidia-h100-80gb": 8, "cpu": 13}
    html = login(tenant_member).get(reverse("tenants:dashboard", args=["acme"])).content.decode()
    # In use is what the tenant's workloads hold (none here); the cluster's figure beside it.
    assert re.search(r"0\s*/\s*16", html)
    assert "cluster reports 8" in html


def test_what_a_tenant_borrows_in_its_cohort_shows_on_its_pages_and_the_fleets(
    approved_tenant, kube_emulator, tenant, tenant_member, platform_admin, login
):
    Tenant.objects.filter(pk=tenant.pk).update(cohort="shared-gpus")
    tenant_reconcile(tenant_id=tenant.pk)
    queue = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")
    assert queue["spec"]["cohortName"] == "shared-gpus"
    flavors_usage = [{"name": "gpu-nvidia-h100-80gb", "resources": [
        {"name": "nvidia.com/gpu", "total": "20", "borrowed": "4"}]}]
    kube_emulator.put_object({**queue, "status": {"flavorsUsage": flavors_usage}})

    tenant_reconcile(tenant_id=tenant.pk)

    quota = Quota.objects.get(tenant=tenant, resource="gpu:nvidia-h100-80gb")
    assert (quota.limit, quota.in_use, quota.borrowed) == (16, 20, 4)
    member = login(tenant_member)
    dashboard = member.get(reverse("tenants:dashboard", args=["acme"])).content.decode()
    assert 'data-borrowed="4"' in dashboard
    assert "4 borrowed from the shared-gpus cohort" in dashboard
    quota_page = member.get(reverse("tenants:quota-detail", args=["acme"])).content.decode()
    assert "4 borrowed now" in quota_page
    lines = member.get("/api/v1/tenants/acme/quota/").json()
    assert {line["resource"]: line["borrowed"] for line in lines["results"]} == {
        "gpu:nvidia-h100-80gb": 4, "cpu": 0}
    fleet = login(platform_admin).get(reverse("inventory:fleet")).content.decode()
    row = re.search(r'<tr data-cohort="shared-gpus" data-resource="gpu:nvidia-h100-80gb">'
                    r'(.*?)</tr>', fleet, re.S)
    assert row, "the cohort's H100 line on the fleet overview"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)
    assert [c.strip() for c in cells[2:7]] == ["1", "16", "20", "4", "0"]
    assert "—" in cells[7]  # no dedicated tenant lends it reserved GPUs

    # Back within its quota: nothing borrowed any more.
    flavors_usage[0]["resources"][0] |= {"total": "9", "borrowed": "0"}
    queue = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")
    kube_emulator.put_object({**queue, "status": {"flavorsUsage": flavors_usage}})
    tenant_reconcile(tenant_id=tenant.pk)
    assert Quota.objects.get(tenant=tenant, resource="gpu:nvidia-h100-80gb").borrowed == 0
    dashboard = member.get(reverse("tenants:dashboard", args=["acme"])).content.decode()
    assert "borrowed from the" not in dashboard


def _hami_quota(tenant):
    """HAMi shares of L40S (48 GiB, 100 %) beside 2 whole H100s and 16 vCPUs."""
    for resource, limit in (("hami:nvidia-l40s:memory-gib", 48), ("hami:nvidia-l40s:cores", 100),
                            ("gpu:nvidia-h100-80gb", 2), ("cpu", 16)):
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)


def test_hami_grants_reach_the_cluster_as_hami_quota_keys_and_usage_comes_back(
    tenant, kube_gateway, kube_emulator
):
    _hami_quota(tenant)

    tenant_reconcile(tenant_id=tenant.pk)

    quota = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    assert_valid([quota])
    hard = quota["spec"]["hard"]
    assert (hard["limits.nvidia.com/gpumem"], hard["limits.nvidia.com/gpucores"]) == (
        "49152", "100"
    )
    assert hard["requests.nvidia.com/gpu"] == "12"  # 2 whole + 10 vGPUs of at least 10 %
    queue = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme")
    assert [f["name"] for f in queue["spec"]["resourceGroups"][1]["flavors"]] == [
        "gpu-nvidia-h100-80gb"
    ]
    # The API server reports what pods ask for (HAMi's own limits.* usage it does not count).
    used = {"requests.nvidia.com/gpumem": "12288", "requests.nvidia.com/gpucores": "30",
            "requests.nvidia.com/gpu": "3"}
    kube_emulator.put_object({**quota, "status": {"hard": hard, "used": used}})
    tenant_reconcile(tenant_id=tenant.pk)
    in_use = dict(Quota.objects.filter(tenant=tenant).values_list("resource", "in_use"))
    assert in_use["hami:nvidia-l40s:memory-gib"] == 12 and in_use["hami:nvidia-l40s:cores"] == 30
    # requests.nvidia.com/gpu counts the vGPU too: not read as whole GPUs.
    assert in_use["gpu:nvidia-h100-80gb"] == 0


def test_hami_shares_get_their_own_queues_which_go_when_the_hami_quota_goes(
    tenant, kube_gateway, kube_emulator
):
    _hami_quota(tenant)

    tenant_reconcile(tenant_id=tenant.pk)

    shares = kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme-shares")
    local = kube_emulator.get_object(KUEUE, "LocalQueue", "shares", NS)
    flavor = kube_emulator.get_object(KUEUE, "ResourceFlavor", "hami-nvidia-l40s")
    assert local["spec"]["clusterQueue"] == "tenant-acme-shares"
    assert [f["name"] for f in shares["spec"]["resourceGroups"][1]["flavors"]] == [
        "hami-nvidia-l40s"]
    assert flavor["spec"]["nodeLabels"] == {"nvidia.com/gpu.product": "NVIDIA-L40S", "gpu": "on"}
    # A usage report that names the shares queue's flavors changes nothing of the GPU lines.
    kube_emulator.put_object({**shares, "status": {"flavorsUsage": [
        {"name": "hami-nvidia-l40s", "resources": [
            {"name": "nvidia.com/gpu", "total": "2", "borrowed": "0"}]}]}})
    tenant_reconcile(tenant_id=tenant.pk)
    assert Quota.objects.get(tenant=tenant, resource="gpu:nvidia-h100-80gb").borrowed == 0

    Quota.objects.filter(tenant=tenant, resource__startswith="hami:").delete()
    tenant_reconcile(tenant_id=tenant.pk)

    assert kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme-shares") is None
    assert kube_emulator.get_object(KUEUE, "LocalQueue", "shares", NS) is None
    # Flavors are every tenant's: they stay, as the main queue and its LocalQueue do.
    assert kube_emulator.get_object(KUEUE, "ResourceFlavor", "hami-nvidia-l40s") is not None
    assert kube_emulator.get_object(KUEUE, "ClusterQueue", "tenant-acme") is not None
    applied = TenantCluster.objects.get(tenant=tenant, cluster="main").applied_manifests
    assert applied and not [m for m in applied if m["metadata"]["name"] == "shares"]


def test_a_cohort_change_re_enforces_the_peers_that_may_borrow_from_it(db):
    lender = Tenant.objects.create(slug="lender", name="Lender", cohort="pool")
    borrower = Tenant.objects.create(slug="borrower", name="Borrower", cohort="pool")
    loner = Tenant.objects.create(slug="loner", name="Loner")
    QuotaFactory(tenant=lender, resource="gpu:nvidia-l40s", limit=8, lending_limit=6)
    QuotaFactory(tenant=borrower, resource="gpu:nvidia-l40s", limit=2, borrowing_limit=4)
    versions = tenant_mark_changed(tenants=[lender])
    assert set(versions) == {lender.pk, borrower.pk}
    assert Tenant.objects.get(pk=loner.pk).desired_version == 1

    from tenants.enforcement.manifests import resource_quota_hard
    from tenants.enforcement.services import tenant_spec

    spec = tenant_spec(tenant=borrower)
    assert spec.cohort_lendable == {"gpu:nvidia-l40s": 6}
    assert resource_quota_hard(spec)["requests.nvidia.com/gpu"] == "6"  # 2 own + 4 borrowed


def test_the_priority_values_are_the_fleets_settings(tenant, settings):
    settings.KUEUE_PRIORITIES = {"serving": 70, "interactive": 60, "batch": 50}
    classes = [m for m in tenant_manifests(tenant_spec(tenant=tenant))
               if m["kind"] == "WorkloadPriorityClass"]
    assert {m["metadata"]["name"]: m["value"] for m in classes} == {
        "portal-serving": 70, "portal-interactive": 60, "portal-batch": 50}


def test_the_demo_fleet_holds_the_same_valid_objects(
    tenant, granted, submit, platform_admin, simulated_gateway, django_capture_on_commit_callbacks
):
    request = _approve(
        submit({"mig:nvidia-a100-80gb:1g.10gb": 14}),
        platform_admin,
        django_capture_on_commit_callbacks,
    )
    assert request.status == S.APPLIED
    stored = [row.body for row in SimulatedObject.objects.all()]
    assert {o["kind"] for o in stored} >= {"Namespace", "ResourceQuota", "ClusterQueue"}
    assert_valid(
        [
            {**o, "metadata": {k: v for k, v in o["metadata"].items() if k not in SERVER_FIELDS}}
            for o in stored
        ]
    )


def test_the_periodic_sweeps_are_scheduled_and_registered(settings):
    from celery import current_app

    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    ours = {
        "tenants.enforcement.tasks.tenants_reconcile_sweep_task",
        "tenants.quota.tasks.quota_grants_sweep_task",
    }
    assert ours <= scheduled
    assert ours <= set(current_app.tasks)


def test_the_sweep_task_reapplies_every_tenant(
    approved_tenant, tenant, other_tenant, kube_emulator, django_capture_on_commit_callbacks
):
    from tenants.enforcement.tasks import tenants_reconcile_sweep_task
    from tenants.quota.tasks import quota_grants_sweep_task

    with django_capture_on_commit_callbacks(execute=True):
        assert tenants_reconcile_sweep_task.apply().get() == 2
    assert kube_emulator.get_object("v1", "Namespace", "tenant-globex") is not None
    assert quota_grants_sweep_task.apply().get() == {"reminded": [], "ended": []}


def test_the_demo_fleet_reports_what_tenant_pods_use_per_gpu_model(
    tenant, simulated_gateway, settings
):
    """The simulated quota controller and Kueue count the pods the demo runs, so the tenant's
    quota shows GPUs in use per model (two models share `nvidia.com/gpu`: only Kueue's
    per-flavor usage can tell them apart)."""
    from inventory.resource_classes import GPU_MODELS

    settings.FLEET_SIMULATED_READY_SECONDS = 0
    for resource, limit in (
        ("gpu:nvidia-h100-80gb", 8),
        ("gpu:nvidia-l40s", 4),
        ("mig:nvidia-a100-80gb:1g.10gb", 7),
        ("cpu", 32),
    ):
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)

    def node(name, model):
        labels = {"nvidia.com/gpu.product": GPU_MODELS[model].product_label}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}

    def pod(name, node_name, resource, amount, *, namespace=NS, phase="Running", cpu="500m"):
        asked = {resource: str(amount), "cpu": cpu}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": QUEUED},
            "spec": {
                "nodeName": node_name,
                "containers": [{"name": "main", "resources": {"requests": asked}}],
            },
            "status": {"phase": phase},
        }

    simulated_gateway.apply(
        manifests=[
            node("h100-a", "nvidia-h100-80gb"),
            node("l40s-a", "nvidia-l40s"),
            node("a100-a", "nvidia-a100-80gb"),
            pod("train", "h100-a", "nvidia.com/gpu", 2),
            pod("serve", "l40s-a", "nvidia.com/gpu", 1),
            *(pod(f"eval-{i}", "a100-a", "nvidia.com/mig-1g.10gb", 1) for i in range(3)),
            pod("done", "h100-a", "nvidia.com/gpu", 8, phase="Succeeded"),
            pod("theirs", "h100-a", "nvidia.com/gpu", 4, namespace="tenant-globex"),
        ]
    )

    tenant_reconcile(tenant_id=tenant.pk)

    used = dict(Quota.objects.filter(tenant=tenant).values_list("resource", "in_use"))
    assert used == {
        "gpu:nvidia-h100-80gb": 2,
        "gpu:nvidia-l40s": 1,
        "mig:nvidia-a100-80gb:1g.10gb": 3,
        "cpu": 3,  # 5 running pods x 500m, rounded up to whole vCPUs
    }
    queue = simulated_gateway.get(api_version=KUEUE, kind="ClusterQueue", name="tenant-acme")
    meta = {k: v for k, v in queue["metadata"].items() if k not in SERVER_FIELDS}
    assert not schema_errors({**queue, "metadata": meta})  # flavorsUsage as Kueue writes it
    # In no cohort, nothing is borrowed (Kueue admits no more than the nominal quota).
    assert set(Quota.objects.filter(tenant=tenant).values_list("borrowed", flat=True)) == {0}


def test_the_demo_fleet_counts_what_a_cohort_tenant_runs_beyond_its_quota_as_borrowed(
    tenant, simulated_gateway, settings
):
    from inventory.resource_classes import GPU_MODELS

    settings.FLEET_SIMULATED_READY_SECONDS = 0
    Tenant.objects.filter(pk=tenant.pk).update(cohort="shared-gpus")
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-l40s", limit=4)
    labels = {"nvidia.com/gpu.product": GPU_MODELS["nvidia-l40s"].product_label}
    simulated_gateway.apply(manifests=[
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "l40s-a", "labels": labels}},
        *({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"serve-{n}", "namespace": NS, "labels": QUEUED},
           "spec": {"nodeName": "l40s-a", "containers": [
               {"name": "main", "resources": {"requests": {"nvidia.com/gpu": "3"}}}]},
           "status": {"phase": "Running"}} for n in range(2)),
    ])

    tenant_reconcile(tenant_id=tenant.pk)

    quota = Quota.objects.get(tenant=tenant, resource="gpu:nvidia-l40s")
    assert (quota.in_use, quota.borrowed) == (6, 2)



def _edit_gpu_quota_on_the_cluster(kube_emulator, value: str) -> None:
    quota = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    hard = {**quota["spec"]["hard"], "requests.nvidia.com/gpu": value}
    edited = {**quota, "spec": {"hard": hard}}
    edited["metadata"] = {k: v for k, v in quota["metadata"].items() if k not in SERVER_FIELDS}
    kube_emulator.put_object(edited)


def test_an_approval_is_applied_without_a_drift_event_and_a_later_edit_is_drift_once(
    tenant,
    granted,
    submit,
    platform_admin,
    kube_gateway,
    kube_emulator,
    django_capture_on_commit_callbacks,
):
    tenant_reconcile(tenant_id=tenant.pk)  # the tenant is on the cluster already, with 8
    request = _approve(
        submit({"gpu:nvidia-h100-80gb": 8}), platform_admin, django_capture_on_commit_callbacks
    )
    assert request.status == S.APPLIED
    with django_capture_on_commit_callbacks(execute=True):
        tenants_reconcile_sweep()
    quota = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "16"
    assert AuditEvent.objects.filter(action="tenant.applied").count() == 2
    assert not AuditEvent.objects.filter(action="tenant.drift_corrected").exists()

    _edit_gpu_quota_on_the_cluster(kube_emulator, "40")  # someone with kubectl
    with django_capture_on_commit_callbacks(execute=True):
        tenants_reconcile_sweep()
        tenants_reconcile_sweep()

    quota = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "16"
    drift = AuditEvent.objects.get(action="tenant.drift_corrected")
    assert drift.changes == {
        f"ResourceQuota {NS}/tenant-quota": {
            "spec.hard.requests.nvidia.com/gpu": {"applied": "16", "found": "40"}
        }
    }


def test_an_edit_made_while_a_grant_waits_is_drift_against_what_was_applied_before(
    tenant,
    granted,
    submit,
    platform_admin,
    kube_gateway,
    kube_emulator,
    django_capture_on_commit_callbacks,
):
    tenant_reconcile(tenant_id=tenant.pk)
    _edit_gpu_quota_on_the_cluster(kube_emulator, "40")
    request = _approve(
        submit({"gpu:nvidia-h100-80gb": 8}), platform_admin, django_capture_on_commit_callbacks
    )

    assert request.status == S.APPLIED
    quota = kube_emulator.get_object("v1", "ResourceQuota", "tenant-quota", NS)
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "16"
    drift = AuditEvent.objects.get(action="tenant.drift_corrected")
    assert drift.changes == {
        f"ResourceQuota {NS}/tenant-quota": {
            "spec.hard.requests.nvidia.com/gpu": {"applied": "8", "found": "40"}
        }
    }


def test_a_tenant_applied_before_the_portal_kept_its_objects_still_has_its_drift_corrected(
    tenant, granted, kube_gateway, kube_emulator, django_capture_on_commit_callbacks
):
    tenant_reconcile(tenant_id=tenant.pk)
    # As after the migration from before the portal kept them.
    TenantCluster.objects.filter(tenant=tenant).update(applied_manifests=[])
    _edit_gpu_quota_on_the_cluster(kube_emulator, "40")

    with django_capture_on_commit_callbacks(execute=True):
        tenants_reconcile_sweep()

    drift = AuditEvent.objects.get(action="tenant.drift_corrected")
    assert drift.changes == {
        f"ResourceQuota {NS}/tenant-quota": {
            "spec.hard.requests.nvidia.com/gpu": {"applied": "8", "found": "40"}
        }
    }
    assert TenantCluster.objects.get(tenant=tenant).applied_manifests  # kept from now on
