"""The test emulator refuses what a real API server refuses: schema violations, unknown fields
and broken CEL rules, answered over HTTP to the official client as the API server answers."""

import json

import celpy
import kmock
import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from core.fleet import PermanentFleetError
from tenants.enforcement.manifests import tenant_manifests
from tenants.workloads.kinds.inference import exposure
from tests.support import kube_validation
from tests.support.kube_validation import SKIPPED_RULES, UNCHECKED_KINDS
from tests.tenants.test_manifests import COHORT, DEDICATED, SHARED
from tests.tenants.workloads import test_endpoint_keys as endpoint_keys_test
from tests.tenants.workloads import test_kind_inference as inference
from tests.tenants.workloads import test_kind_slurm as slurm
from tests.tenants.workloads import test_kind_vcluster as vcluster
from tests.tenants.workloads import test_kind_vm as vm


def cluster_queue(name="acme", **spec):
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {"matchLabels": {"portal.ai-factory/tenant": name}},
            "resourceGroups": [{
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [{"name": "h100",
                             "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "2"}]}],
            }],
            **spec,
        },
    }


def config_map(name="settings", **extra):
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "acme"}, "data": {"a": "b"}, **extra,
    }


def refusal(caught):
    """The HTTP status and Status body the official client received."""
    cause = caught.value.__cause__
    assert isinstance(cause, client.ApiException), cause
    return cause.status, json.loads(cause.body)


@pytest.fixture
def namespace_acme(kube_gateway):
    kube_gateway.apply(manifests=[{"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": "acme"}}])


def test_a_missing_required_field_is_refused_with_422_and_its_path(kube_gateway, kube_emulator):
    queue = cluster_queue()
    del queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    with pytest.raises(PermanentFleetError) as caught:
        kube_gateway.apply(manifests=[queue])
    status, body = refusal(caught)
    assert status == 422 and caught.value.status == 422
    assert body["kind"] == "Status" and body["reason"] == "Invalid" and body["code"] == 422
    assert body["details"]["kind"] == "ClusterQueue"
    assert body["details"]["group"] == "kueue.x-k8s.io"
    assert {"reason": "FieldValueRequired", "message": "Required value",
            "field": "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"} in (
        body["details"]["causes"]
    )
    assert body["message"].startswith('ClusterQueue.kueue.x-k8s.io "acme" is invalid')
    assert kube_emulator.get_object("kueue.x-k8s.io/v1beta2", "ClusterQueue", "acme") is None


def test_a_built_in_kind_missing_a_required_field_is_refused(kube_gateway, namespace_acme):
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "edit", "namespace": "acme"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole"},
    }
    with pytest.raises(PermanentFleetError) as caught:
        kube_gateway.apply(manifests=[binding])
    status, body = refusal(caught)
    assert status == 422 and body["reason"] == "Invalid"
    assert "roleRef.name" in {c["field"] for c in body["details"]["causes"]}


def test_an_unknown_field_in_a_server_side_apply_is_refused(kube_gateway, kube_emulator):
    # Apply always types the whole patch: the API server refuses unknown fields with 400
    # whatever fieldValidation says (only create/update/patch prune them).
    queue = cluster_queue(queueingStrategyy="BestEffortFIFO")
    with pytest.raises(PermanentFleetError) as caught:
        kube_gateway.apply(manifests=[queue])
    status, body = refusal(caught)
    assert status == 400 and body["reason"] == "BadRequest"
    assert ".spec.queueingStrategyy: field not declared in schema" in body["message"]
    assert kube_emulator.get_object("kueue.x-k8s.io/v1beta2", "ClusterQueue", "acme") is None


def test_an_unknown_field_in_a_built_in_apply_is_refused(kube_gateway, namespace_acme):
    with pytest.raises(PermanentFleetError) as caught:
        kube_gateway.apply(manifests=[config_map(immutablee=True)])
    status, body = refusal(caught)
    assert status == 400 and ".immutablee: field not declared in schema" in body["message"]


def test_unknown_fields_are_refused_under_strict_field_validation(kube_gateway, namespace_acme):
    # Neither the gateway's DynamicClient (no such parameter) nor the typed API (it refuses
    # the unknown field itself before sending) can ask for it: the query string does.
    with pytest.raises(client.ApiException) as caught:
        DynamicClient(kube_gateway.api_client).request(
            "post", "/api/v1/namespaces/acme/configmaps?fieldValidation=Strict",
            body=config_map(immutablee=True),
        )
    assert caught.value.status == 400
    assert 'strict decoding error: unknown field "immutablee"' in json.loads(
        caught.value.body
    )["message"]


def test_unknown_fields_are_pruned_on_create_without_field_validation(
    kube_gateway, kube_emulator, namespace_acme
):
    # The client sends no fieldValidation; the API server's default (Warn) drops the field.
    assert kube_gateway.create(manifest=config_map(immutablee=True))
    stored = kube_emulator.get_object("v1", "ConfigMap", "settings", "acme")
    assert stored["data"] == {"a": "b"} and "immutablee" not in stored


def test_a_broken_cel_rule_is_refused_with_its_message(kube_gateway, kube_emulator):
    queue = cluster_queue()
    queue["spec"]["resourceGroups"][0]["coveredResources"].append("cpu")  # flavor lists 1 of 2
    with pytest.raises(PermanentFleetError) as caught:
        kube_gateway.apply(manifests=[queue])
    status, body = refusal(caught)
    assert status == 422 and body["reason"] == "Invalid"
    assert {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "object": flavors must have the same number of resources '
        "as the coveredResources",
        "field": "spec.resourceGroups[0]",
    } in body["details"]["causes"]


def test_a_transition_rule_is_checked_against_the_stored_object(kube_gateway, namespace_acme):
    local = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "default", "namespace": "acme"},
             "spec": {"clusterQueue": "acme"}}
    kube_gateway.apply(manifests=[local])
    local["spec"]["clusterQueue"] = "other"
    with pytest.raises(PermanentFleetError) as caught:
        kube_gateway.apply(manifests=[local])
    status, body = refusal(caught)
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "spec.clusterQueue"
    assert "field is immutable" in body["details"]["causes"][0]["message"]


def test_cel_rules_see_the_schema_defaults(kube_gateway, namespace_acme):
    # Slinky's rule reads `self.external`, which only its default sets.
    (controller,) = [m for m in slurm.everything(slurm.clean()) if m["kind"] == "Controller"]
    controller["metadata"]["namespace"] = "acme"
    del controller["spec"]["slurmKeyRef"]
    with pytest.raises(PermanentFleetError) as caught:
        kube_gateway.apply(manifests=[controller])
    status, body = refusal(caught)
    assert status == 422
    assert "slurmKeyRef must be set when external is false" in body["message"]


def _workload_manifests():
    yield "inference", [inference.service()]
    yield "vcluster", vcluster.manifests({})
    yield "vm", [vm.the_vm(vm.clean())]
    yield "slurm", slurm.everything(slurm.clean())
    published = endpoint_keys_test._ctx(credentials=("chat-key-1",))
    yield "inference published", [*exposure.manifests(published),
                                   exposure.key_secret(published, 1, "afk_key")]


@pytest.mark.parametrize("spec", [SHARED, DEDICATED, COHORT], ids=lambda s: s.slug)
def test_the_tenants_objects_are_accepted(kube_gateway, spec):
    manifests = tenant_manifests(spec)
    stored = kube_gateway.apply(manifests=manifests)
    assert [(m["kind"], m["metadata"]["name"]) for m in stored] == [
        (m["kind"], m["metadata"]["name"]) for m in manifests
    ]


@pytest.mark.parametrize("kind,manifests", list(_workload_manifests()), ids=lambda v: v)
def test_every_object_a_workload_kind_writes_is_accepted(kube_gateway, kind, manifests):
    namespace = manifests[0]["metadata"]["namespace"]
    kube_gateway.apply(manifests=[{"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": namespace}}])
    stored = kube_gateway.apply(manifests=manifests)
    for sent, kept in zip(manifests, stored, strict=True):
        # Stored as sent: nothing the portal writes is pruned as unknown.
        assert {k: kept.get(k) for k in sent if k != "metadata"} == {
            k: v for k, v in sent.items() if k != "metadata"
        }, sent["kind"]
        assert kept["metadata"]["labels"] == sent["metadata"]["labels"]


def test_a_rule_calling_a_function_cel_python_lacks_is_not_skipped_silently():
    with pytest.raises(kmock.KubernetesError) as caught:
        kube_validation._program("isURL(self.name)")
    assert caught.value.status == 500
    assert "['isURL']" in caught.value.message and "SKIPPED_RULES" in caught.value.message


def test_kubernetes_ascii_case_functions_are_evaluated():
    rule = kube_validation._program("self.lowerAscii() != 'host' && self.upperAscii() == 'HOST'")
    assert not rule.evaluate({"self": celpy.celtypes.StringType("Host")})
    assert kube_validation._program("self.lowerAscii() == 'é'").evaluate(
        {"self": celpy.celtypes.StringType("é")})  # ASCII only, as Kubernetes folds


def test_only_the_tlsroute_rules_on_names_the_portal_never_writes_are_skipped():
    """Two TLSRoute hostname rules call Kubernetes' IP and strings libraries (isIP, substring),
    which cel-python lacks; they judge addresses and wildcards, which the portal never writes.
    Every other rule of every vendored CRD is evaluated."""
    assert len(SKIPPED_RULES) == 2
    assert all(reason.startswith("TLSRoute") for reason in SKIPPED_RULES.values())
    assert {("isIP(" in rule, "substring(" in rule) for rule in SKIPPED_RULES} == {
        (True, False), (False, True)}


def test_the_unchecked_kinds_are_only_controllers():
    assert {kind for _, kind in UNCHECKED_KINDS} == {
        "VirtualMachineInstance", "DataVolume", "ClusterServingRuntime"
    }


def _every_kind_the_portal_writes():
    seen = {}
    for manifests in [tenant_manifests(COHORT), *(m for _, m in _workload_manifests())]:
        for manifest in manifests:
            seen.setdefault((manifest["apiVersion"], manifest["kind"]), manifest)
    return seen


@pytest.mark.parametrize(
    "manifest", list(_every_kind_the_portal_writes().values()), ids=lambda m: m["kind"]
)
def test_an_unknown_field_in_any_kind_the_portal_writes_is_refused(kube_gateway, manifest):
    namespace = manifest["metadata"].get("namespace")
    if namespace:
        kube_gateway.apply(manifests=[{"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": namespace}}])
    holder = "spec" if isinstance(manifest.get("spec"), dict) else None
    broken = {**manifest, holder: {**manifest[holder], "bogus": 1}} if holder else {
        **manifest, "bogus": 1
    }
    with pytest.raises(PermanentFleetError) as caught:
        kube_gateway.apply(manifests=[broken])
    status, body = refusal(caught)
    field = f".{holder}.bogus" if holder else ".bogus"
    assert status == 400 and f"{field}: field not declared in schema" in body["message"]
