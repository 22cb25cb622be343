"""An inference endpoint's minimum replicas in a ClusterQueue of their own: the manifests, checked
against Kueue's schemas and the rules its webhooks and controllers hold."""

import dataclasses

import pytest

from tenants.enforcement.manifests import EndpointQueue, Grant, TenantSpec, tenant_manifests
from tenants.enforcement.manifests.endpoint_queues import endpoint_queue

from .kube_schemas import assert_valid

H100 = "gpu:nvidia-h100-80gb"
MIG = "mig:nvidia-a100-80gb:1g.10gb"
CHAT = EndpointQueue(
    name="chat", resource=H100, per_replica=2, min_replicas=2, cpu=8, memory_gib=32
)
SHARED = TenantSpec(
    slug="acme",
    isolation="shared",
    edit_groups=("oidc:tenant-acme",),
    cohort="shared-gpus",
    cohort_lendable={H100: 8},
    grants=(
        Grant(H100, 16, borrowing_limit=4, lending_limit=8),
        Grant(MIG, 7),
        Grant("cpu", 64),
        Grant("memory-gib", 256),
    ),
    endpoint_queues=(CHAT, EndpointQueue("tiny", MIG, 1, 3, 2, 8)),
)
LENDER = TenantSpec(
    slug="helix",
    isolation="dedicated",
    edit_groups=("g",),
    cohort="shared-gpus",
    lends=True,
    grants=(Grant(H100, 32, lending_limit=24), Grant("cpu", 768), Grant("memory-gib", 8192)),
    endpoint_queues=(CHAT,),
)
ALONE = dataclasses.replace(LENDER, slug="vault", cohort="", lends=False)
LONG = dataclasses.replace(
    SHARED,
    slug="a" * 63,
    endpoint_queues=(
        dataclasses.replace(CHAT, name="e" * 63),
        dataclasses.replace(CHAT, name="e" * 62 + "f"),
    ),
)


def _named(manifests, kind, name):
    (found,) = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    return found


def _cells(queue):
    return {
        (flavor["name"], cell["name"]): cell
        for group in queue["spec"]["resourceGroups"]
        for flavor in group["flavors"]
        for cell in flavor["resources"]
    }


@pytest.mark.parametrize("spec", [SHARED, LENDER, ALONE, LONG], ids=lambda s: s.slug[:8])
def test_endpoint_queues_validate_against_kueues_schemas_in_an_order_a_cluster_accepts(spec):
    manifests = tenant_manifests(spec)
    assert_valid(manifests)
    at = {(m["kind"], m["metadata"]["name"]): i for i, m in enumerate(manifests)}
    for m in manifests:
        if m["kind"] == "ClusterQueue":
            assert (
                at[("Cohort", m["spec"]["cohortName"])]
                < at[("ClusterQueue", m["metadata"]["name"])]
            )
        if m["kind"] == "LocalQueue":
            assert (
                at[("ClusterQueue", m["spec"]["clusterQueue"])]
                < at[("LocalQueue", m["metadata"]["name"])]
            )
    names = [
        m["metadata"]["name"] for m in manifests if m["kind"] in {"ClusterQueue", "LocalQueue"}
    ]
    assert len(names) == len(set(names))
    # An endpoint's queue names are label values (kueue.x-k8s.io/queue-name; Kueue's labels).
    assert all(len(n) <= 63 for n in names[1:] if n not in {"default", "shares"})


def test_an_endpoints_minimum_is_its_queues_nominal_quota_and_the_tenants_total_its_grant():
    manifests = tenant_manifests(SHARED)
    own = _cells(_named(manifests, "ClusterQueue", "tenant-acme"))
    chat = _named(manifests, "ClusterQueue", "tenant-acme-ep-chat")
    tiny = _cells(_named(manifests, "ClusterQueue", "tenant-acme-ep-tiny"))
    gpu, mig = (
        ("gpu-nvidia-h100-80gb", "nvidia.com/gpu"),
        ("gpu-nvidia-a100-80gb", "nvidia.com/mig-1g.10gb"),
    )
    assert _cells(chat)[gpu] == {"name": "nvidia.com/gpu", "nominalQuota": "4"}  # 2 x 2
    assert tiny[mig] == {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "3"}
    assert (own[gpu]["nominalQuota"], own[mig]["nominalQuota"]) == ("12", "4")
    cpu, memory = ("portal-default", "cpu"), ("portal-default", "memory")
    assert [q[cpu]["nominalQuota"] for q in (own, _cells(chat), tiny)] == ["42", "16", "6"]
    assert [q[memory]["nominalQuota"] for q in (own, _cells(chat), tiny)] == [
        "168Gi",
        "64Gi",
        "24Gi",
    ]
    # The tenant's limits are its Cohort's now (its queues borrow from each other freely).
    assert not any({"borrowingLimit", "lendingLimit"} & set(c) for c in own.values())
    cohort = _named(manifests, "Cohort", "tenant-acme-cohort")
    assert cohort["spec"]["parentName"] == "shared-gpus"
    assert _cells(cohort)[gpu] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "0",
        "borrowingLimit": "4",
        "lendingLimit": "8",
    }
    for queue in (_named(manifests, "ClusterQueue", "tenant-acme"), chat):
        assert queue["spec"]["cohortName"] == "tenant-acme-cohort"
        assert queue["spec"]["preemption"]["reclaimWithinCohort"] == "Any"
    local = _named(manifests, "LocalQueue", "ep-chat")
    assert (local["metadata"]["namespace"], local["spec"]["clusterQueue"]) == (
        "tenant-acme",
        "tenant-acme-ep-chat",
    )


def test_endpoints_never_take_more_than_the_grant_leaves():
    spec = dataclasses.replace(
        SHARED, endpoint_queues=(CHAT, dataclasses.replace(CHAT, name="big", min_replicas=10))
    )
    manifests = tenant_manifests(spec)
    gpu = ("gpu-nvidia-h100-80gb", "nvidia.com/gpu")
    assert [
        _cells(_named(manifests, "ClusterQueue", name))[gpu]["nominalQuota"]
        for name in ("tenant-acme-ep-chat", "tenant-acme-ep-big", "tenant-acme")
    ] == ["4", "12", "0"]


def test_a_dedicated_lender_keeps_its_rules_in_its_cohort():
    manifests = tenant_manifests(LENDER)
    cohort = _named(manifests, "Cohort", "tenant-helix-cohort")
    cells = _cells(cohort)
    assert cells[("gpu-nvidia-h100-80gb-reserved-helix", "nvidia.com/gpu")] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "0",
        "borrowingLimit": "0",
        "lendingLimit": "24",
    }
    assert cells[("portal-default", "cpu")]["lendingLimit"] == "0"
    chat = _named(manifests, "ClusterQueue", "tenant-helix-ep-chat")
    assert "borrowWithinCohort" not in chat["spec"]["preemption"]
    # Not lending: a Cohort of its own, with no parent (and so no limits).
    alone = _named(tenant_manifests(ALONE), "Cohort", "tenant-vault-cohort")
    assert alone["spec"] == {}


def test_which_endpoints_get_a_queue_of_their_own():
    spec = {"gpu": H100, "gpus_per_replica": 2, "min_replicas": 1, "cpu": 8, "memory_gib": 32}
    assert endpoint_queue("chat", spec, dedicated=False) == EndpointQueue("chat", H100, 2, 1, 8, 32)
    assert endpoint_queue("chat", {**spec, "min_replicas": 0}, dedicated=False) is None
    assert endpoint_queue("chat", {**spec, "gpu": "hami:nvidia-l40s"}, dedicated=False) is None
    assert endpoint_queue("chat", {**spec, "gpu": MIG}, dedicated=True) is None
    # Without any: the tenant's objects are as before (no Cohort of its own).
    plain = tenant_manifests(dataclasses.replace(SHARED, endpoint_queues=()))
    assert [m["metadata"]["name"] for m in plain if m["kind"] == "Cohort"] == ["shared-gpus"]
