"""The portal's RBAC (deploy/base/rbac) is exactly what its fleet gateway uses.

Every operation the portal asks of a cluster is driven here through the real gateway against
the emulator, and each request is turned into the authorizer's question (verb, group, resource,
namespace, name) as the API server asks it. The test fails when a request is not granted by the
portal's ClusterRole (or, in a tenant's namespace, the role its RoleBinding there grants), and
when the ClusterRoles grant anything no request used.
"""

from __future__ import annotations

import functools

import pytest
from django.conf import settings

from inventory.models import Cluster, HealthEvent, NodeState
from inventory.services import cluster as node_cluster
from inventory.services import lifecycle as node_lifecycle
from inventory.services.sync import cluster_sync
from tenants.credentials import services as credentials
from tenants.enforcement.manifests.spec import PORTAL_ROLE_BINDING
from tenants.enforcement.services import tenant_reconcile
from tenants.models import Quota
from tenants.workloads import services
from tenants.workloads.endpoint_keys import EndpointKey
from tenants.workloads.models import Workload, WorkloadStatus
from tenants.workloads.services import endpoint_keys
from tenants.workloads.services.reconcile import workloads_observe_sweep
from tests.factories import GPUFactory, NodeFactory, QuotaFactory, TenantFactory
from tests.inventory.cluster_objects import RTX_LABELS, node, pod
from tests.tenants.workloads.conftest import (
    H100,
    INFERENCE_SPEC,
    SLURM_SPEC,
    VCLUSTER_SPEC,
    VM_SPEC,
    ready_helm_release,
    ready_inference_service,
    run_slurm,
    run_vm,
    ssh_public_key,
)

from .rbac_rules import allows, attributes, granted_triples, is_discovery, render

RBAC = "rbac.authorization.k8s.io"
PORTAL_ROLE = "ai-factory-portal"
QUOTA = {H100: 8, "cpu": 64, "memory-gib": 512, "storage-gib": 400, "count:inference": 3,
         "count:vcluster": 3, "count:vm": 2, "count:slurm": 1}


def _objects() -> dict[tuple[str, str], dict]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in render()}


def _tenant(slug: str):
    # In a cohort: its shared tenants borrow from one another (a Kueue Cohort).
    tenant = TenantFactory(slug=slug, name=slug.title(), cohort="research")
    for resource, limit in QUOTA.items():
        QuotaFactory(tenant=tenant, resource=resource, limit=limit)
    return tenant


def _member(tenant):
    from tests.factories import MembershipFactory, UserFactory

    return MembershipFactory(tenant=tenant, role="member",
                             user=UserFactory(username=f"{tenant.slug}-member")).user


def _owned_by(kube_emulator, api_version, kind, name, namespace, owner_kind, owner):
    """What an operator makes carries an ownerReference to what it was made from."""
    kube_emulator.patch_object(api_version, kind, name, namespace, patch={"metadata": {
        "ownerReferences": [{"apiVersion": "slinky.slurm.net/v1beta1", "kind": owner_kind,
                             "name": owner, "uid": "x", "controller": True}]}})


def _reconcile(workload_id: int) -> str:
    return services.workload_reconcile(workload_id=workload_id)


def _drive_workloads(kube_emulator, tenant, other) -> None:
    """Each kind: launch/apply, observe, scale or power, kubeconfig, delete; the sweeps."""
    ns, who = tenant.namespace, _member(tenant)
    # All on the main cluster, whose sweep is read below (Hall B is the emulator too).
    launch = functools.partial(services.workload_launch, cluster="main")
    chat = launch(tenant=tenant, actor=who, kind="inference", name="chat", spec=INFERENCE_SPEC)
    dev = launch(tenant=tenant, actor=who, kind="vcluster", name="dev", spec=VCLUSTER_SPEC)
    box = launch(tenant=tenant, actor=who, kind="vm", name="box",
                 spec={**VM_SPEC, "ssh_public_key": ssh_public_key()})
    hpc = launch(tenant=tenant, actor=who, kind="slurm", name="hpc",
                 spec={**SLURM_SPEC, "accounting": True, "rest_api": True})
    for workload in (chat, dev, box, hpc):
        _reconcile(workload.pk)
    # The endpoint's API keys: a Secret each, named in its SecurityPolicy; revoked: deleted.
    for name in ("chat-app", "ci"):
        endpoint_keys.endpoint_key_create(workload_id=chat.pk, actor=who, name=name)
    _reconcile(chat.pk)
    revoked = EndpointKey.objects.get(name="ci")
    endpoint_keys.endpoint_key_revoke(workload_id=chat.pk, key_id=revoked.pk, actor=who)
    _reconcile(chat.pk)
    ready_inference_service(kube_emulator, name="chat", namespace=ns)
    release = kube_emulator.get_object("helm.toolkit.fluxcd.io/v2", "HelmRelease", "dev", ns)
    ready_helm_release(kube_emulator, name="dev", namespace=ns,
                       server=release["spec"]["values"]["exportKubeConfig"]["server"])
    run_vm(kube_emulator, name="box", namespace=ns)
    labels = {"portal.ai-factory.io/workload-id": str(hpc.pk),
              "app.kubernetes.io/managed-by": "ai-factory-portal"}
    run_slurm(kube_emulator, ctx_name="hpc", namespace=ns, workers=2, labels=labels)
    _owned_by(kube_emulator, "apps/v1", "StatefulSet", "hpc-controller", ns, "Controller", "hpc")
    _owned_by(kube_emulator, "apps/v1", "Deployment", "hpc-login", ns, "LoginSet", "hpc-login")
    for workload in (chat, dev, box):
        assert services.workload_observe(workload_id=workload.pk) == "ready", workload
    services.workload_observe(workload_id=hpc.pk)  # its accounting and REST API still start

    dev.refresh_from_db()
    assert "server:" in services.workload_kubeconfig(workload=dev, actor=who)
    # Two vClusters in one namespace: the sweep lists that namespace's Secrets.
    dev2 = launch(tenant=tenant, actor=who, kind="vcluster", name="dev2", spec=VCLUSTER_SPEC)
    _reconcile(dev2.pk)
    # A workload of another tenant: the sweep reads across the cluster (Secrets per namespace).
    other_who = _member(other)
    other_hpc = launch(tenant=other, actor=other_who, kind="slurm", name="hpc",
                       spec=SLURM_SPEC)
    _reconcile(other_hpc.pk)
    # Kueue holds a replica of `chat` in the queue: the sweep reads Kueue's Workloads and the
    # visibility API's pending workloads of the tenant's LocalQueue.
    chat_labels = kube_emulator.get_object("serving.kserve.io/v1beta1", "InferenceService",
                                           "chat", ns)["metadata"]["labels"]
    kube_emulator.put_object({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "chat-predictor-1", "namespace": ns,
                     "labels": {**chat_labels, "serving.kserve.io/inferenceservice": "chat"}},
        "spec": {"containers": [{"name": "kserve-container", "image": "vllm"}],
                 "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
    })
    assert workloads_observe_sweep() == 6
    # Admitted and gone (the emulator has no controllers to delete it with its endpoint).
    kube_emulator.patch_object("v1", "Pod", "chat-predictor-1", ns, patch={
        "metadata": {"labels": {"portal.ai-factory.io/workload-id": None}}})

    services.workload_scale(workload_id=chat.pk, actor=who, changes={"max_replicas": 1})
    services.workload_scale(workload_id=hpc.pk, actor=who, changes={"workers": 1})
    services.workload_power(workload_id=box.pk, actor=who, action="restart")
    for workload in (chat, hpc, box):
        _reconcile(workload.pk)
    assert kube_emulator.get_object("kubevirt.io/v1", "VirtualMachineInstance", "box", ns) is None
    run_vm(kube_emulator, name="box", namespace=ns)
    services.workload_observe(workload_id=box.pk)
    services.workload_power(workload_id=box.pk, actor=who, action="stop")
    _reconcile(box.pk)

    for workload in (chat, dev, dev2, box, hpc, other_hpc):
        actor = other_who if workload.tenant_id == other.pk else who
        services.workload_delete(workload_id=workload.pk, actor=actor)
        _reconcile(workload.pk)
    # What an operator made waits for its owner's garbage collector, which the emulator lacks.
    assert Workload.objects.filter(status=WorkloadStatus.DELETED).count() >= 2


def _drive_credentials(tenant, on_commit) -> None:
    """Model credentials: their Secrets and ServiceAccounts applied, then one pruned."""
    who = tenant.memberships.get().user
    with on_commit(execute=True):
        token = credentials.credential_create(
            actor=who, tenant=tenant, name="hf-token", kind="huggingface",
            values={"token": "hf_" + "t" * 30})
        credentials.credential_create(actor=who, tenant=tenant, name="bucket", kind="s3",
                                      values={"access_key_id": "AKIA1234",
                                              "secret_access_key": "s" * 40})
    with on_commit(execute=True):
        credentials.credential_delete(actor=who, credential=token)
    assert credentials.credentials_reconcile(tenant_id=tenant.pk).pruned == []


def _drive_nodes(kube_emulator, tenant, on_commit) -> None:
    """Inventory sync, cordon, uncordon, reservation, drain with evictions."""
    name = "gpu-a-001"
    kube_emulator.put_object(node(name, RTX_LABELS | {"kubernetes.io/hostname": name}, gpus=8))
    kube_emulator.put_object(pod("train-0", tenant.namespace, name, gpus=4))
    kube_emulator.put_object(pod("serve-0", tenant.namespace, "elsewhere", gpus=1))
    gpu_node = NodeFactory(hostname=name, k8s_name=name, state=NodeState.AVAILABLE)
    cluster_sync(cluster="main")
    with on_commit(execute=True):
        node_lifecycle.node_cordon(node_id=gpu_node.pk, actor=None, reason="fan")
    with on_commit(execute=True):
        node_lifecycle.node_uncordon(node_id=gpu_node.pk, actor=None, reason="fixed")
    gpu_node.refresh_from_db()
    gpu_node.reserved_for = tenant.slug
    gpu_node.save(update_fields=["reserved_for"])
    assert node_cluster.node_reservation_reconcile(node_id=gpu_node.pk) is True
    event = HealthEvent.objects.create(node=gpu_node, kind="xid", subject="gpu:3",
                                       severity="critical", detail="XID 79")
    with on_commit(execute=True):
        node_lifecycle.node_drain(node_id=gpu_node.pk, actor=None, reason="XID 79",
                                  health_event_id=event.pk)
    assert kube_emulator.get_object("v1", "Pod", "train-0", tenant.namespace) is None


@pytest.fixture
def every_call(kube_emulator, kube_gateway, django_capture_on_commit_callbacks, settings):
    """Every request the portal makes while it does everything it can do to a cluster."""
    # vClusters published through the fleet's Gateway (their TLSRoutes), SSH through
    # LoadBalancer Services: everything the portal can be configured to do.
    settings.VCLUSTER_DOMAIN = "vc.example.com"
    settings.SSH_LOAD_BALANCER = True
    settings.INFERENCE_DOMAIN = "endpoints.example.com"  # endpoints through the gateway
    for index in range(8):
        GPUFactory(node=NodeFactory(reserved_for=""), index=index, model="nvidia-h100-80gb")
    with kube_emulator.recording() as calls:
        acme, globex = _tenant("acme"), _tenant("globex")
        # Acme holds HAMi shares too: their own queues, deleted once that quota goes.
        for resource, limit in (("hami:nvidia-l40s:memory-gib", 48),
                                ("hami:nvidia-l40s:cores", 100)):
            QuotaFactory(tenant=acme, resource=resource, limit=limit)
        for tenant in (acme, globex):
            tenant_reconcile(tenant_id=tenant.pk)
        tenant_reconcile(tenant_id=acme.pk)  # again: it reads back what it applied (drift)
        Quota.objects.filter(tenant=acme, resource__startswith="hami:").delete()
        tenant_reconcile(tenant_id=acme.pk)
        # Initech has quota on a second cluster, then none there: its objects leave it.
        Cluster.objects.create(slug="b", name="Hall B")
        initech = TenantFactory(slug="initech", name="Initech")
        QuotaFactory(tenant=initech, cluster_id="b", resource="cpu", limit=8)
        tenant_reconcile(tenant_id=initech.pk, cluster="b")
        Quota.objects.filter(tenant=initech).delete()
        assert tenant_reconcile(tenant_id=initech.pk, cluster="b").withdrawn
        _drive_workloads(kube_emulator, acme, globex)
        _drive_credentials(acme, django_capture_on_commit_callbacks)
        _drive_nodes(kube_emulator, acme, django_capture_on_commit_callbacks)
    return calls


@pytest.mark.django_db
def test_the_cluster_role_grants_exactly_what_the_gateway_uses(every_call, kube_emulator):
    objects = _objects()
    portal_rules = objects[("ClusterRole", PORTAL_ROLE)]["rules"]
    secrets_rules = objects[("ClusterRole", settings.FLEET_SECRETS_CLUSTER_ROLE)]["rules"]
    tenant_namespaces = {
        binding["metadata"]["namespace"]
        for binding in kube_emulator.list_objects(f"{RBAC}/v1", "RoleBinding")
        if binding["metadata"]["name"] == PORTAL_ROLE_BINDING
        and binding["roleRef"]["name"] == settings.FLEET_SECRETS_CLUSTER_ROLE
    }
    # Initech's namespace was deleted (the emulator leaves what was in it).
    assert tenant_namespaces == {"tenant-acme", "tenant-globex", "tenant-initech"}

    refused, used_cluster, used_secrets = [], set(), set()
    for call in every_call:
        if is_discovery(call.path):
            assert call.method == "GET", call
            continue
        for check in attributes(call):
            if allows(portal_rules, check):
                used_cluster.add(check.triple)
            elif check.namespace in tenant_namespaces and allows(secrets_rules, check):
                used_secrets.add(check.triple)
            else:
                refused.append(f"{check.verb} {check.group}/{check.resource} "
                               f"{check.namespace}/{check.name} ({call.method} {call.path})")
    assert refused == [], "requests the portal's RBAC does not grant:\n" + "\n".join(refused)
    assert sorted(granted_triples(portal_rules) - used_cluster) == [], "granted, never used"
    assert sorted(granted_triples(secrets_rules) - used_secrets) == [], "granted, never used"


def test_no_wildcards_no_cluster_wide_secrets_and_bind_only_on_the_roles_it_grants():
    objects = _objects()
    roles = [doc for doc in objects.values() if doc["kind"] in {"ClusterRole", "Role"}]
    assert {doc["metadata"]["name"] for doc in roles} == {
        PORTAL_ROLE, settings.FLEET_SECRETS_CLUSTER_ROLE}
    for doc in roles:
        for rule in doc["rules"]:
            assert "*" not in str(rule), rule
            assert "nonResourceURLs" not in rule
    portal_rules = objects[("ClusterRole", PORTAL_ROLE)]["rules"]
    assert not any("secrets" in rule["resources"] for rule in portal_rules)
    (bind,) = [rule for rule in portal_rules if "bind" in rule["verbs"]]
    assert bind == {"apiGroups": [RBAC], "resources": ["clusterroles"], "verbs": ["bind"],
                    "resourceNames": sorted(["edit", "view", "ai-factory-portal-tenant-secrets"])}
    assert settings.TENANT_EDIT_CLUSTER_ROLE in bind["resourceNames"]


def test_the_binding_names_the_account_the_settings_name():
    objects = _objects()
    account = objects[("ServiceAccount", settings.FLEET_SERVICE_ACCOUNT)]
    namespace = account["metadata"]["namespace"]
    assert namespace == settings.FLEET_SERVICE_ACCOUNT_NAMESPACE == "ai-factory-portal"
    binding = objects[("ClusterRoleBinding", PORTAL_ROLE)]
    assert binding["roleRef"] == {"apiGroup": RBAC, "kind": "ClusterRole", "name": PORTAL_ROLE}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "portal",
                                    "namespace": namespace}]
