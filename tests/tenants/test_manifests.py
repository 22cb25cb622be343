"""The tenant's objects on the cluster, built by pure functions and checked against the schemas."""

import dataclasses

import pytest

from inventory.resource_classes import PASSTHROUGH_RESOURCES
from tenants.enforcement.manifests import (
    PRIORITY_CLASSES,
    RESERVED_FOR_KEY,
    TENANT_LABEL,
    Grant,
    LentFlavor,
    TenantSpec,
    burst_ceiling,
    drifted_fields,
    drifted_paths,
    mig_resource_names,
    scheduling_for,
    stale_manifests,
    tenant_manifests,
)

from .kube_schemas import assert_valid, quota_key_errors, schema_errors

SHARED = TenantSpec(
    slug="nova",
    isolation="shared",
    edit_groups=("oidc:/tenants/nova/owner", "oidc:/tenants/nova/member"),
    view_groups=("oidc:/tenants/nova/viewer",),
    grants=(
        Grant("gpu:nvidia-h100-80gb", 16),
        Grant("gpu:nvidia-l40s", 24),
        Grant("mig:nvidia-a100-80gb:1g.10gb", 28),
        Grant("mig:nvidia-h100-80gb:1g.10gb", 7),
        Grant("cpu", 256),
        Grant("memory-gib", 2048),
        Grant("storage-gib", 10000),
        Grant("count:inference", 10),
    ),
)
DEDICATED = TenantSpec(
    slug="helix",
    isolation="dedicated",
    edit_groups=("oidc:tenant-helix",),
    grants=(Grant("gpu:nvidia-h200", 32), Grant("cpu", 768), Grant("memory-gib", 8192)),
)
COHORT = TenantSpec(
    slug="atlas",
    isolation="shared",
    edit_groups=("oidc:tenant-atlas",),
    cohort="shared-gpus",
    cohort_lendable={"gpu:nvidia-l40s": 20},
    grants=(
        Grant("gpu:nvidia-l40s", 8, borrowing_limit=4, lending_limit=2),
        Grant("gpu:nvidia-h100-80gb", 2),
        Grant("cpu", 96),
    ),
)
# A shared tenant with HAMi shares of two models (one of them also as whole GPUs), in a cohort.
HAMI = TenantSpec(
    slug="atlas",
    isolation="shared",
    edit_groups=("oidc:tenant-atlas",),
    cohort="shared-gpus",
    cohort_lendable={"gpu:nvidia-l40s": 4},
    grants=(
        Grant("gpu:nvidia-l40s", 2),
        Grant("hami:nvidia-l40s:memory-gib", 96),
        Grant("hami:nvidia-l40s:cores", 200),
        Grant("hami:nvidia-h100-80gb:memory-gib", 40),
        Grant("hami:nvidia-h100-80gb:cores", 50),
        Grant("cpu", 64),
        Grant("count:inference", 4),
    ),
)
# A dedicated tenant whose owners lend its idle reserved GPUs to the cohort, and a shared member
# of that cohort that may borrow them (its H200 line; it holds no L40S, so not vault's).
LENDER = dataclasses.replace(
    DEDICATED, cohort="shared-gpus", lends=True,
    grants=(Grant("gpu:nvidia-h200", 32, lending_limit=24), Grant("cpu", 768),
            Grant("memory-gib", 8192)),
)
BORROWER = TenantSpec(
    slug="atlas",
    isolation="shared",
    edit_groups=("oidc:tenant-atlas",),
    cohort="shared-gpus",
    cohort_lendable={"gpu:nvidia-h200": 24 + 8},
    lent_flavors=(LentFlavor("helix", "nvidia-h200"), LentFlavor("vault", "nvidia-l40s")),
    grants=(
        Grant("gpu:nvidia-h200", 2, borrowing_limit=6),
        Grant("mig:nvidia-a100-80gb:1g.10gb", 7),
        Grant("cpu", 96),
    ),
)
EMPTY = TenantSpec(slug="fresh", isolation="shared", edit_groups=("oidc:tenant-fresh",))
SUSPENDED = TenantSpec(
    slug="orbit", isolation="shared", edit_groups=("g",), suspended=True, grants=(Grant("cpu", 8),)
)


def _by_kind(manifests):
    found = {}
    for m in manifests:
        found.setdefault(m["kind"], []).append(m)
    return found


def _one(manifests, kind):
    (obj,) = _by_kind(manifests)[kind]
    return obj


@pytest.mark.parametrize(
    "spec", [SHARED, DEDICATED, COHORT, HAMI, EMPTY, SUSPENDED, LENDER, BORROWER],
    ids=lambda s: f"{s.slug}-{s.isolation}{'-lends' if s.lends else ''}"
)
def test_every_manifest_validates_against_kubernetes_and_kueue_schemas(spec):
    manifests = tenant_manifests(spec)
    assert_valid(manifests)
    kinds = [m["kind"] for m in manifests]
    assert kinds[0] == "Namespace"
    # Each ClusterQueue after the flavors it names, each LocalQueue after its ClusterQueue.
    at = {(m["kind"], m["metadata"]["name"]): i for i, m in enumerate(manifests)}
    for i, m in enumerate(manifests):
        if m["kind"] == "ClusterQueue":
            names = {f["name"] for g in m["spec"]["resourceGroups"] for f in g["flavors"]}
            assert all(at[("ResourceFlavor", name)] < i for name in names)
        if m["kind"] == "LocalQueue":
            assert at[("ClusterQueue", m["spec"]["clusterQueue"])] < i
    assert {"ResourceQuota", "LimitRange", "NetworkPolicy", "RoleBinding"} <= set(kinds)


def test_the_schema_check_catches_a_broken_manifest():
    bad_quota = _one(tenant_manifests(SHARED), "ResourceQuota") | {"bogus": True}
    assert schema_errors(bad_quota)
    queue = _one(tenant_manifests(SHARED), "ClusterQueue")
    queue["spec"]["queueingStrategy"] = "Whenever"
    assert schema_errors(queue)


def test_resource_quota_counts_gpus_mig_cpu_memory_storage_and_objects():
    hard = _one(tenant_manifests(SHARED), "ResourceQuota")["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == "40"  # H100 + L40S, whole GPUs
    assert hard["requests.nvidia.com/mig-1g.10gb"] == "35"  # A100 and H100 slices
    assert hard["requests.cpu"] == "256"
    assert hard["requests.memory"] == "2048Gi"
    assert hard["requests.storage"] == "10000Gi"
    assert hard["count/inferenceservices.serving.kserve.io"] == "10"
    # Not granted is denied, not unlimited.
    assert hard["count/virtualmachines.kubevirt.io"] == "0"
    assert hard["requests.nvidia.com/mig-3g.40gb"] == "0"
    assert {f"requests.{name}" for name in mig_resource_names()} <= set(hard)
    # A VM's passthrough GPUs: each model's resource with its whole-GPU grant, the others 0.
    passthrough = {model: hard[f"requests.{name}"]
                   for model, name in PASSTHROUGH_RESOURCES.items()}
    assert passthrough == {"nvidia-h200": "0", "nvidia-h100-80gb": "16", "nvidia-a100-80gb": "0",
                           "nvidia-l40s": "24", "nvidia-rtx-4000-ada": "0"}


def test_cluster_queue_has_a_flavor_per_gpu_model_listing_exactly_the_covered_resources():
    queue = _one(tenant_manifests(SHARED), "ClusterQueue")
    cpu_group, gpu_group, _passthrough = queue["spec"]["resourceGroups"]
    assert cpu_group["coveredResources"] == ["cpu", "memory"]
    assert gpu_group["coveredResources"] == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]
    quota = {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
        for f in gpu_group["flavors"]
    }
    assert quota == {
        "gpu-nvidia-h100-80gb": {"nvidia.com/gpu": "16", "nvidia.com/mig-1g.10gb": "7"},
        "gpu-nvidia-a100-80gb": {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "28"},
        "gpu-nvidia-l40s": {"nvidia.com/gpu": "24", "nvidia.com/mig-1g.10gb": "0"},
    }
    assert queue["spec"]["namespaceSelector"] == {"matchLabels": {TENANT_LABEL: "nova"}}
    assert "cohortName" not in queue["spec"]
    flavors = {
        f["metadata"]["name"]: f for f in _by_kind(tenant_manifests(SHARED))["ResourceFlavor"]
    }
    assert flavors["gpu-nvidia-h100-80gb"]["spec"]["nodeLabels"] == {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"
    }


def test_vms_passthrough_gpus_are_a_group_of_their_own_with_each_models_whole_gpu_quota():
    manifests = tenant_manifests(SHARED)
    queue = _one(manifests, "ClusterQueue")
    group = queue["spec"]["resourceGroups"][-1]
    flavors = {f["metadata"]["name"]: f for f in _by_kind(manifests)["ResourceFlavor"]}

    # Whole H100 and L40S granted (the A100 only as MIG: no VM gets one passed through).
    assert group["coveredResources"] == ["nvidia.com/GH100_H100_SXM5_80GB",
                                         "nvidia.com/AD102GL_L40S"]
    assert _cells(queue, -1) == {
        ("gpu-passthrough", "nvidia.com/GH100_H100_SXM5_80GB"):
            {"name": "nvidia.com/GH100_H100_SXM5_80GB", "nominalQuota": "16"},
        ("gpu-passthrough", "nvidia.com/AD102GL_L40S"):
            {"name": "nvidia.com/AD102GL_L40S", "nominalQuota": "24"},
    }
    # Passthrough nodes carry no product label: the resource name says the model.
    assert flavors["gpu-passthrough"]["spec"] == {}
    assert_valid(manifests)


def test_a_cohort_tenants_passthrough_gpus_borrow_and_lend_as_its_grants_say():
    queue = _one(tenant_manifests(COHORT), "ClusterQueue")
    cells = _cells(queue, -1)

    assert cells[("gpu-passthrough", "nvidia.com/AD102GL_L40S")] == {
        "name": "nvidia.com/AD102GL_L40S", "nominalQuota": "8", "borrowingLimit": "4",
        "lendingLimit": "2",
    }
    assert "borrowingLimit" not in cells[("gpu-passthrough", "nvidia.com/GH100_H100_SXM5_80GB")]


def test_a_dedicated_tenants_passthrough_gpus_are_on_its_reserved_nodes():
    manifests = tenant_manifests(DEDICATED)
    queue = _one(manifests, "ClusterQueue")
    flavor = next(f for f in _by_kind(manifests)["ResourceFlavor"]
                  if f["metadata"]["name"] == "gpu-passthrough-reserved-helix")

    assert _cells(queue, -1) == {
        ("gpu-passthrough-reserved-helix", "nvidia.com/GH100_H200_SXM_141GB"):
            {"name": "nvidia.com/GH100_H200_SXM_141GB", "nominalQuota": "32"},
    }
    assert flavor["spec"] == {
        "nodeLabels": {RESERVED_FOR_KEY: "helix"},
        "nodeTaints": [{"key": RESERVED_FOR_KEY, "value": "helix", "effect": "NoSchedule"}],
        "tolerations": scheduling_for(DEDICATED)["tolerations"],
    }
    assert flavor["metadata"]["labels"][TENANT_LABEL] == "helix"


def test_a_tenant_without_whole_gpus_gets_no_passthrough_group():
    for spec in (EMPTY, SUSPENDED):
        manifests = tenant_manifests(spec)
        groups = _one(manifests, "ClusterQueue")["spec"]["resourceGroups"]
        assert [g["coveredResources"] for g in groups] == [["cpu", "memory"]]
        assert all(not f["metadata"]["name"].startswith("gpu-passthrough")
                   for f in _by_kind(manifests)["ResourceFlavor"])


def test_the_rule_check_catches_a_passthrough_flavor_missing_a_covered_resource():
    manifests = tenant_manifests(SHARED)
    group = _one(manifests, "ClusterQueue")["spec"]["resourceGroups"][-1]
    group["flavors"][0]["resources"].pop()
    with pytest.raises(AssertionError):
        assert_valid(manifests)


def test_local_queue_points_at_the_tenants_cluster_queue_in_its_namespace():
    local = _one(tenant_manifests(SHARED), "LocalQueue")
    assert local["metadata"] == {
        "name": "default",
        "namespace": "tenant-nova",
        "labels": {"app.kubernetes.io/managed-by": "ai-factory-portal", TENANT_LABEL: "nova"},
    }
    assert local["spec"] == {"clusterQueue": "tenant-nova"}


def test_dedicated_tenant_gets_whole_gpus_on_its_reserved_nodes_and_no_partitions():
    manifests = tenant_manifests(DEDICATED)
    hard = _one(manifests, "ResourceQuota")["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == "32"
    assert all(hard[f"requests.{name}"] == "0" for name in mig_resource_names())
    assert hard["requests.nvidia.com/gpumem"] == "0" and hard["requests.nvidia.com/gpucores"] == "0"
    flavor = next(
        f
        for f in _by_kind(manifests)["ResourceFlavor"]
        if f["metadata"]["name"] != "portal-default"
    )
    assert flavor["metadata"]["name"] == "gpu-nvidia-h200-reserved-helix"
    assert flavor["spec"]["nodeLabels"] == {
        "nvidia.com/gpu.product": "NVIDIA-H200",
        RESERVED_FOR_KEY: "helix",
    }
    assert flavor["spec"]["nodeTaints"] == [
        {"key": RESERVED_FOR_KEY, "value": "helix", "effect": "NoSchedule"}
    ]
    assert flavor["spec"]["tolerations"] == scheduling_for(DEDICATED)["tolerations"]
    gpu_group = _one(manifests, "ClusterQueue")["spec"]["resourceGroups"][1]
    assert gpu_group["coveredResources"] == ["nvidia.com/gpu"]
    assert (
        _one(manifests, "Namespace")["metadata"]["labels"]["portal.ai-factory.io/isolation"]
        == "dedicated"
    )


def test_dedicated_tenant_never_gets_mig_even_if_a_grant_slipped_through():
    spec = TenantSpec(
        slug="x",
        isolation="dedicated",
        edit_groups=("g",),
        grants=(Grant("mig:nvidia-a100-80gb:1g.10gb", 7),),
    )
    manifests = tenant_manifests(spec)
    assert (
        _one(manifests, "ResourceQuota")["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"] == "0"
    )
    assert len(_one(manifests, "ClusterQueue")["spec"]["resourceGroups"]) == 1
    assert_valid(manifests)


def test_a_shared_tenants_hami_shares_are_quota_keys_hami_and_the_api_server_enforce():
    manifests = tenant_manifests(HAMI)
    hard = _one(manifests, "ResourceQuota")["spec"]["hard"]

    # HAMi's scheduler reads only `limits.`, per namespace: every model's grants summed, in MiB.
    assert hard["limits.nvidia.com/gpumem"] == str((96 + 40) * 1024)
    assert hard["limits.nvidia.com/gpucores"] == "250"
    # The API server reads `requests.` (a container's own figure), the same grants.
    assert hard["requests.nvidia.com/gpumem"] == "139264"
    assert hard["requests.nvidia.com/gpucores"] == "250"
    # It counts vGPUs as nvidia.com/gpu: the whole GPUs (with what the cohort may lend) plus
    # one vGPU per 10 % of compute granted, the smallest share the portal launches.
    assert hard["requests.nvidia.com/gpu"] == str(2 + 4 + 200 // 10 + 50 // 10)
    assert quota_key_errors(hard) == []
    assert_valid(manifests)


def _queue(manifests, name):
    return next(m for m in manifests if m["kind"] == "ClusterQueue"
                and m["metadata"]["name"] == name)


def test_hami_shares_stay_out_of_the_main_queue_and_whole_gpus_out_of_the_shares_queue():
    manifests = tenant_manifests(HAMI)
    queue = _queue(manifests, "tenant-atlas")
    covered = [r for g in queue["spec"]["resourceGroups"] for r in g["coveredResources"]]
    flavors = [f["name"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]]

    assert not any(name.startswith(("nvidia.com/gpumem", "nvidia.com/gpucores"))
                   for name in covered)
    assert "gpu-nvidia-l40s" in flavors  # granted as whole GPUs too
    assert "gpu-nvidia-h100-80gb" not in flavors  # only HAMi shares: no whole-GPU cell
    shares = _queue(manifests, "tenant-atlas-shares")
    assert [f["name"] for g in shares["spec"]["resourceGroups"] for f in g["flavors"]] == [
        "portal-default", "hami-nvidia-h100-80gb", "hami-nvidia-l40s"]


def test_a_shared_tenants_hami_shares_queue_in_their_own_cluster_queue_metered_per_model():
    manifests = tenant_manifests(HAMI)
    shares = _queue(manifests, "tenant-atlas-shares")["spec"]
    cpu_group, hami_group = shares["resourceGroups"]

    assert hami_group["coveredResources"] == [
        "nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores"]
    quota = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
             for f in hami_group["flavors"]}
    # gpumem in MiB; vGPUs bounded by compute over the smallest share (10 %): never first to bind.
    assert quota == {
        "hami-nvidia-h100-80gb": {"nvidia.com/gpu": "5", "nvidia.com/gpumem": str(40 * 1024),
                                  "nvidia.com/gpucores": "50"},
        "hami-nvidia-l40s": {"nvidia.com/gpu": "20", "nvidia.com/gpumem": str(96 * 1024),
                             "nvidia.com/gpucores": "200"},
    }
    assert cpu_group["flavors"] == [{"name": "portal-default", "resources": [
        {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "0Gi"}]}]
    # Nothing lent or borrowed: HAMi enforces the namespace's own limits.
    assert "cohortName" not in shares
    assert shares["preemption"] == {"withinClusterQueue": "LowerPriority"}
    assert shares["namespaceSelector"] == {"matchLabels": {TENANT_LABEL: "atlas"}}
    flavors = {f["metadata"]["name"]: f for f in _by_kind(manifests)["ResourceFlavor"]}
    assert flavors["hami-nvidia-l40s"]["spec"] == {"nodeLabels": {
        "nvidia.com/gpu.product": "NVIDIA-L40S", "gpu": "on"}}
    assert TENANT_LABEL not in flavors["hami-nvidia-l40s"]["metadata"]["labels"]  # every tenant's
    local = [m for m in manifests if m["kind"] == "LocalQueue"]
    assert [(m["metadata"]["name"], m["spec"]["clusterQueue"]) for m in local] == [
        ("default", "tenant-atlas"), ("shares", "tenant-atlas-shares")]
    assert local[1]["metadata"]["namespace"] == "tenant-atlas"
    assert_valid(manifests)


def test_a_suspended_tenant_holds_its_shares_queue_too():
    spec = dataclasses.replace(HAMI, suspended=True)
    assert _queue(tenant_manifests(spec), "tenant-atlas-shares")["spec"]["stopPolicy"] == "Hold"
    assert _queue(tenant_manifests(HAMI), "tenant-atlas-shares")["spec"]["stopPolicy"] == "None"


def test_no_shares_queue_without_hami_quota_and_the_stale_one_is_for_removal():
    without = dataclasses.replace(HAMI, grants=tuple(
        g if not g.resource.startswith("hami:") else Grant(g.resource, 0) for g in HAMI.grants))
    before, after = tenant_manifests(HAMI), tenant_manifests(without)

    assert [m["metadata"]["name"] for m in after if m["kind"] == "ClusterQueue"] == [
        "tenant-atlas"]
    assert not [m for m in after if m["metadata"]["name"].startswith("hami-")]
    # What goes: the tenant's own shares queues, LocalQueue first; not the flavors every
    # tenant's queues may name.
    assert [(m["kind"], m["metadata"]["name"]) for m in stale_manifests(without, before, after)
            ] == [("LocalQueue", "shares"), ("ClusterQueue", "tenant-atlas-shares")]
    assert stale_manifests(HAMI, before, before) == []


def test_a_dedicated_tenant_never_gets_hami_shares_even_if_a_grant_slipped_through():
    spec = TenantSpec(
        slug="helix",
        isolation="dedicated",
        edit_groups=("g",),
        grants=(Grant("gpu:nvidia-h200", 8), Grant("hami:nvidia-h200:memory-gib", 141),
                Grant("hami:nvidia-h200:cores", 100)),
    )
    manifests = tenant_manifests(spec)
    hard = _one(manifests, "ResourceQuota")["spec"]["hard"]

    for key in ("limits.nvidia.com/gpumem", "limits.nvidia.com/gpucores",
                "requests.nvidia.com/gpumem", "requests.nvidia.com/gpucores"):
        assert hard[key] == "0", key
    assert hard["requests.nvidia.com/gpu"] == "8"  # no vGPU allowance
    assert [m["metadata"]["name"] for m in manifests if m["kind"] == "LocalQueue"] == ["default"]
    assert_valid(manifests)


def test_a_shared_tenant_without_hami_grants_gets_none_on_the_cluster():
    hard = _one(tenant_manifests(SHARED), "ResourceQuota")["spec"]["hard"]
    assert hard["limits.nvidia.com/gpumem"] == "0" and hard["limits.nvidia.com/gpucores"] == "0"
    assert hard["requests.nvidia.com/gpu"] == "40"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("nvidia.com", "1"),  # no `/`: not a standard quota resource
        ("gpumem", "1"),
        ("limits.nvidia.com/", "1"),
        ("limits.Nvidia_com/gpumem", "1"),
        ("limits.nvidia.com/gpu mem", "1"),
        ("limits.nvidia.com/gpumem", "-1"),
        ("limits.nvidia.com/gpumem", "1.5"),
        ("requests.nvidia.com/gpumem", "lots"),
    ],
)
def test_the_quota_key_check_refuses_what_the_api_server_refuses(key, value):
    assert quota_key_errors({key: value})
    assert quota_key_errors({"requests.cpu": "1.5", "limits.nvidia.com/gpumem": "3000"}) == []


def test_cohort_tenant_borrows_within_its_limits_and_its_quota_ceiling_includes_it():
    manifests = tenant_manifests(COHORT)
    queue = _one(manifests, "ClusterQueue")
    assert queue["spec"]["cohortName"] == "shared-gpus"
    assert _one(manifests, "Cohort")["metadata"]["name"] == "shared-gpus"
    cells = {
        (f["name"], r["name"]): r
        for f in queue["spec"]["resourceGroups"][1]["flavors"]
        for r in f["resources"]
    }
    assert cells[("gpu-nvidia-l40s", "nvidia.com/gpu")] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "8",
        "borrowingLimit": "4",
        "lendingLimit": "2",
    }
    # A line without limits borrows freely, as much as peers lend.
    assert "borrowingLimit" not in cells[("gpu-nvidia-h100-80gb", "nvidia.com/gpu")]
    hard = _one(manifests, "ResourceQuota")["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == str(8 + 4 + 2)  # L40S 8+4, H100 2+0 lendable
    assert hard["requests.nvidia.com/AD102GL_L40S"] == str(8 + 4)  # a VM borrows alike
    assert burst_ceiling(Grant("r", 8, borrowing_limit=None), lendable=20) == 28
    assert burst_ceiling(Grant("r", 8, borrowing_limit=30), lendable=20) == 28


def test_the_portals_priority_classes_come_before_the_queue_with_the_values_set():
    spec = dataclasses.replace(SHARED, priorities={"serving": 900, "interactive": 40, "batch": 4})
    manifests = tenant_manifests(spec)
    kinds = [m["kind"] for m in manifests]
    classes = {m["metadata"]["name"]: m["value"] for m in _by_kind(manifests)[
        "WorkloadPriorityClass"]}
    assert classes == {"portal-serving": 900, "portal-interactive": 40, "portal-batch": 4}
    assert set(classes) == {priority.name for priority in PRIORITY_CLASSES.values()}
    assert max(i for i, k in enumerate(kinds) if k == "WorkloadPriorityClass") < kinds.index(
        "ClusterQueue")
    # Cluster-wide, the same for every tenant (its name carries no tenant).
    for manifest in _by_kind(manifests)["WorkloadPriorityClass"]:
        assert "namespace" not in manifest["metadata"]
        assert TENANT_LABEL not in manifest["metadata"]["labels"]
    assert_valid(manifests)


def test_the_same_priorities_as_kubernetes_priority_classes_that_never_preempt():
    """For pods that cannot carry Kueue's label (a vCluster's synced pods), Kueue reads the
    pod's PriorityClass: the same names and values; preemption stays Kueue's."""
    spec = dataclasses.replace(SHARED, priorities={"serving": 900, "interactive": 40, "batch": 4})
    pod_classes = _by_kind(tenant_manifests(spec))["PriorityClass"]
    assert {m["metadata"]["name"]: m["value"] for m in pod_classes} == {
        "portal-serving": 900, "portal-interactive": 40, "portal-batch": 4}
    for manifest in pod_classes:
        assert manifest["apiVersion"] == "scheduling.k8s.io/v1"
        assert manifest["preemptionPolicy"] == "Never"
        assert manifest["globalDefault"] is False
        assert "namespace" not in manifest["metadata"]
        assert TENANT_LABEL not in manifest["metadata"]["labels"]
    assert_valid(pod_classes)


def test_within_a_queue_lower_priority_gives_way_and_a_cohort_reclaims_what_it_lent():
    def rules(spec):
        return _one(tenant_manifests(spec), "ClusterQueue")["spec"]["preemption"]

    assert rules(SHARED) == {"withinClusterQueue": "LowerPriority"}
    # In a cohort: the lender takes its quota back from any borrower (Kueue picks the lowest
    # priority first), and a borrower may displace a lower-priority borrower.
    assert rules(COHORT) == {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority"},
    }
    # A dedicated tenant is in no cohort: nobody reclaims from it.
    assert rules(DEDICATED) == {"withinClusterQueue": "LowerPriority"}
    assert "cohortName" not in _one(tenant_manifests(DEDICATED), "ClusterQueue")["spec"]


def _cells(queue, group=1):
    return {(f["name"], r["name"]): r for f in queue["spec"]["resourceGroups"][group]["flavors"]
            for r in f["resources"]}


def test_a_dedicated_tenant_that_lends_joins_the_cohort_never_borrows_and_takes_back_its_own():
    manifests = tenant_manifests(LENDER)
    queue = _one(manifests, "ClusterQueue")
    assert queue["spec"]["cohortName"] == "shared-gpus"
    assert _one(manifests, "Cohort")["metadata"]["name"] == "shared-gpus"
    # Never borrows (so nothing it runs is reclaimed by another), lends what its line says.
    assert _cells(queue)[("gpu-nvidia-h200-reserved-helix", "nvidia.com/gpu")] == {
        "name": "nvidia.com/gpu", "nominalQuota": "32", "borrowingLimit": "0",
        "lendingLimit": "24",
    }
    # Its CPU and memory are neither lent nor borrowed: it lends GPUs only.
    assert all(cell["borrowingLimit"] == cell["lendingLimit"] == "0"
               for cell in _cells(queue, 0).values())
    # Takes back what it lent; never displaces a borrower to borrow itself.
    assert queue["spec"]["preemption"] == {
        "withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    # Its own pods and quota are as before: its reserved nodes, its own GPUs only.
    assert _one(manifests, "ResourceQuota") == _one(tenant_manifests(DEDICATED), "ResourceQuota")
    assert [f for f in manifests if f["kind"] == "ResourceFlavor"] == [
        f for f in tenant_manifests(DEDICATED) if f["kind"] == "ResourceFlavor"]
    # Without a lending limit, all of its idle quota may be borrowed.
    unlimited = dataclasses.replace(LENDER, grants=(Grant("gpu:nvidia-h200", 32),))
    assert "lendingLimit" not in _cells(_one(tenant_manifests(unlimited), "ClusterQueue"))[
        ("gpu-nvidia-h200-reserved-helix", "nvidia.com/gpu")]


def test_a_dedicated_tenant_that_does_not_lend_stays_out_of_its_cohort():
    named = dataclasses.replace(LENDER, lends=False)
    manifests = tenant_manifests(named)
    queue = _one(manifests, "ClusterQueue")
    assert "cohortName" not in queue["spec"] and "Cohort" not in _by_kind(manifests)
    assert queue["spec"]["preemption"] == {"withinClusterQueue": "LowerPriority"}
    assert not any("borrowingLimit" in c or "lendingLimit" in c for c in _cells(queue).values())


def test_a_shared_tenant_lists_the_lenders_flavors_of_the_models_it_holds_all_borrowed():
    manifests = tenant_manifests(BORROWER)
    queue = _one(manifests, "ClusterQueue")
    group = queue["spec"]["resourceGroups"][1]
    assert group["coveredResources"] == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]
    # Its own flavors first (Kueue tries them in order), then the lender's; not vault's L40S.
    assert [f["name"] for f in group["flavors"]] == [
        "gpu-nvidia-h200", "gpu-nvidia-a100-80gb", "gpu-nvidia-h200-reserved-helix"]
    cells = _cells(queue)
    assert cells[("gpu-nvidia-h200-reserved-helix", "nvidia.com/gpu")] == {
        "name": "nvidia.com/gpu", "nominalQuota": "0", "borrowingLimit": "6"}
    assert cells[("gpu-nvidia-h200-reserved-helix", "nvidia.com/mig-1g.10gb")] == {
        "name": "nvidia.com/mig-1g.10gb", "nominalQuota": "0", "borrowingLimit": "0"}
    assert queue["spec"]["preemption"]["borrowWithinCohort"] == {"policy": "LowerPriority"}
    # The lender's flavor comes along, the very object its lender applies (taint, tolerations
    # Kueue adds to the borrowed pods): the queue never names a flavor not there yet.
    lent = next(f for f in manifests if f["metadata"]["name"] == "gpu-nvidia-h200-reserved-helix")
    assert lent == next(f for f in tenant_manifests(LENDER)
                        if f["metadata"]["name"] == "gpu-nvidia-h200-reserved-helix")
    assert lent["spec"]["tolerations"] == scheduling_for(DEDICATED)["tolerations"]
    assert _one(manifests, "ResourceQuota")["spec"]["hard"]["requests.nvidia.com/gpu"] == str(
        2 + 6)  # its own and what it may borrow
    # A dedicated tenant borrows from nobody, lender or not.
    other = (LentFlavor("vault", "nvidia-h200"),)
    assert "reserved-vault" not in str(
        tenant_manifests(dataclasses.replace(LENDER, lent_flavors=other)))


def test_a_shared_tenant_lists_no_more_lenders_flavors_than_a_resource_group_holds():
    many = dataclasses.replace(BORROWER, lent_flavors=tuple(
        LentFlavor(f"lender-{n}", "nvidia-h200") for n in range(80)))
    queue = _one(tenant_manifests(many), "ClusterQueue")
    assert len(queue["spec"]["resourceGroups"][1]["flavors"]) == 64
    assert_valid(tenant_manifests(many))


def test_network_policy_denies_all_but_the_tenant_itself_the_ingress_gateway_and_dns():
    policy = _one(tenant_manifests(SHARED), "NetworkPolicy")["spec"]
    assert policy["podSelector"] == {} and policy["policyTypes"] == ["Ingress", "Egress"]
    sources = [peer for rule in policy["ingress"] for peer in rule["from"]]
    assert sources == [
        {"podSelector": {}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-gateway"}}},
    ]
    assert {p["port"] for p in policy["egress"][1]["ports"]} == {53}


def test_network_policy_admits_the_gateways_publishing_its_workloads():
    spec = dataclasses.replace(SHARED, gateway_namespaces=("envoy-gateway-system", "notebooks"))
    policy = _one(tenant_manifests(spec), "NetworkPolicy")
    sources = [peer for rule in policy["spec"]["ingress"] for peer in rule["from"]]
    assert sources[-2:] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}
        for name in ("envoy-gateway-system", "notebooks")]
    assert_valid([policy])
    same = dataclasses.replace(SHARED, gateway_namespaces=("ingress-gateway",))
    assert len(_one(tenant_manifests(same), "NetworkPolicy")["spec"]["ingress"]) == 2


@pytest.mark.django_db
def test_the_notebook_gateways_namespace_is_let_in_when_notebooks_are_published(tenant,
                                                                               settings):
    from tenants.enforcement.services import tenant_spec

    settings.INFERENCE_DOMAIN = ""
    settings.NOTEBOOK_GATEWAY = "notebook-gateway/fleet"
    gateway = {"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "notebook-gateway"}}}

    def sources() -> list[dict]:
        policy = _one(tenant_manifests(tenant_spec(tenant=tenant)), "NetworkPolicy")
        return [peer for rule in policy["spec"]["ingress"] for peer in rule["from"]]

    settings.NOTEBOOK_DOMAIN = "notebooks.example.com"
    assert gateway in sources()
    settings.NOTEBOOK_DOMAIN = ""
    assert gateway not in sources()


def test_role_bindings_give_owner_and_member_groups_edit_and_viewers_view():
    edit, view, _portal = _by_kind(tenant_manifests(SHARED))["RoleBinding"]
    assert edit["metadata"]["namespace"] == view["metadata"]["namespace"] == "tenant-nova"
    assert edit["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "edit",
    }
    assert [s["name"] for s in edit["subjects"]] == [
        "oidc:/tenants/nova/owner", "oidc:/tenants/nova/member"
    ]
    assert view["roleRef"]["name"] == "view"
    assert view["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
         "name": "oidc:/tenants/nova/viewer"}
    ]


def test_the_portal_reads_secrets_in_the_tenants_namespace_through_a_binding_of_its_own():
    *_, portal = _by_kind(tenant_manifests(SHARED))["RoleBinding"]
    assert portal["metadata"]["namespace"] == "tenant-nova"
    assert portal["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "ai-factory-portal-tenant-secrets"}
    assert portal["subjects"] == [
        {"kind": "ServiceAccount", "name": "portal", "namespace": "ai-factory-portal"}
    ]


@pytest.mark.django_db
def test_role_bindings_use_the_same_keycloak_group_paths_as_sign_in(tenant, settings):
    from tenants.enforcement.services import tenant_spec
    from tenants.identity.claims import membership_from_group

    settings.KUBERNETES_OIDC_GROUPS_PREFIX = "oidc:"
    spec = tenant_spec(tenant=tenant)
    paths = [g.removeprefix("oidc:") for g in spec.edit_groups + spec.view_groups]
    assert [membership_from_group(p, settings.OIDC_GROUP_PREFIX) for p in paths] == [
        ("acme", "owner"), ("acme", "member"), ("acme", "viewer")
    ]


def test_suspended_tenant_holds_its_queue():
    assert _one(tenant_manifests(SUSPENDED), "ClusterQueue")["spec"]["stopPolicy"] == "Hold"
    assert _one(tenant_manifests(SHARED), "ClusterQueue")["spec"]["stopPolicy"] == "None"


def test_building_twice_gives_the_same_objects():
    assert tenant_manifests(COHORT) == tenant_manifests(COHORT)


def test_drift_ignores_server_defaults_and_canonical_quantities_but_sees_edits():
    quota = _one(tenant_manifests(SHARED), "ResourceQuota")
    live = {
        **quota,
        "metadata": {**quota["metadata"], "uid": "1", "resourceVersion": "9"},
        "spec": {"hard": {**quota["spec"]["hard"], "requests.memory": "2Ti"}},
        "status": {"used": {}},
    }
    assert drifted_fields(quota, live) == []
    live["spec"]["hard"]["requests.nvidia.com/gpu"] = "999"
    assert drifted_fields(quota, live) == ["spec"]
    live["metadata"]["labels"] = {}
    assert drifted_fields(quota, live) == ["spec", "metadata.labels"]
    assert drifted_fields(quota, None) == ["<missing>"]


def test_drift_names_each_field_that_differs_with_what_was_applied_and_what_was_found():
    quota = _one(tenant_manifests(SHARED), "ResourceQuota")
    applied_gpus = quota["spec"]["hard"]["requests.nvidia.com/gpu"]
    live = {**quota, "spec": {"hard": {**quota["spec"]["hard"], "requests.memory": "2Ti"}}}
    assert drifted_paths(quota, live) == {}
    live["spec"]["hard"]["requests.nvidia.com/gpu"] = "999"
    live["metadata"] = {**quota["metadata"], "labels": {}}
    assert drifted_paths(quota, live) == {
        "spec.hard.requests.nvidia.com/gpu": {"applied": applied_gpus, "found": "999"}
    } | {
        f"metadata.labels.{k}": {"applied": v, "found": None}
        for k, v in quota["metadata"]["labels"].items()
    }
    assert drifted_paths(quota, None) == {"<missing>": {"applied": "present", "found": None}}
