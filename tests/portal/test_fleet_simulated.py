"""The simulated fleet: objects in the database, controllers played when objects are read."""

import base64
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from core.fleet import PermanentFleetError, gateway_override, get_gateway
from core.models import SimulatedObject
from demo.fleet.simulated import SimulatedFleetGateway
from tenants.workloads.kinds import inference, vcluster, vm
from tenants.workloads.kinds.base import BuildContext, GpuOffer, LaunchContext
from tenants.workloads.kinds.schemas import manifest_errors
from tenants.workloads.registry import KINDS
from tests.tenants.workloads.openssh_keys import ed25519_public

GFD_LABELS = json.loads(
    (Path(__file__).parents[1] / "data/nvidia/node-labels-sample-rtx4000ada.json").read_text()
)
ISVC = {"api_version": "serving.kserve.io/v1beta1", "kind": "InferenceService"}


def inference_service(
    name: str = "llm", ns: str = "acme", team: str = "nlp", gpus: str = "1"
) -> dict:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": ns, "labels": {"team": team}},
        "spec": {
            "predictor": {
                "model": {
                    "modelFormat": {"name": "vLLM"},
                    "storageUri": "hf://Qwen/Qwen2.5-0.5B-Instruct",
                    "resources": {"limits": {"nvidia.com/gpu": gpus}},
                }
            }
        },
    }


def helm_release(name: str = "team-a", ns: str = "acme") -> dict:
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "interval": "10m",
            "chart": {
                "spec": {
                    "chart": "vcluster",
                    "version": "0.30.0",
                    "sourceRef": {"kind": "HelmRepository", "name": "loft"},
                }
            },
            "values": {"exportKubeConfig": {"server": f"https://{name}.{ns}.svc:443"}},
        },
    }


def age(gateway_kind: str, name: str, seconds: float) -> None:
    """Pretend the object's spec last changed `seconds` ago."""
    SimulatedObject.objects.filter(kind=gateway_kind, name=name).update(
        updated_at=timezone.now() - timedelta(seconds=seconds)
    )


def condition(obj: dict, kind: str) -> dict:
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind)


def test_get_gateway_defaults_to_the_simulated_fleet(settings, db):
    settings.FLEET_BACKEND = "simulated"

    # Each call's guard wraps the one gateway pooled for the cluster.
    assert isinstance(get_gateway("main").inner, SimulatedFleetGateway)
    assert get_gateway("main").inner is get_gateway("main").inner
    replacement = SimulatedFleetGateway()
    with gateway_override(replacement):
        assert get_gateway("main") is replacement
    assert get_gateway("main").inner is not replacement


def test_apply_creates_then_reapplying_changes_nothing(simulated_gateway):
    (created,) = simulated_gateway.apply(manifests=[inference_service()])
    (again,) = simulated_gateway.apply(manifests=[inference_service()])

    assert created["metadata"]["uid"] == again["metadata"]["uid"]
    assert created["metadata"]["resourceVersion"] == again["metadata"]["resourceVersion"] == "1"
    assert created["metadata"]["generation"] == 1
    assert SimulatedObject.objects.filter(kind="InferenceService").count() == 1


def test_apply_of_a_new_spec_bumps_the_generation_and_keeps_the_status(simulated_gateway, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    simulated_gateway.apply(manifests=[inference_service()])
    observed = simulated_gateway.get(**ISVC, name="llm", namespace="acme")

    (updated,) = simulated_gateway.apply(manifests=[inference_service(gpus="2")])

    assert updated["metadata"]["generation"] == 2
    assert int(updated["metadata"]["resourceVersion"]) > int(
        observed["metadata"]["resourceVersion"]
    )
    assert updated["spec"]["predictor"]["model"]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert updated["status"] == observed["status"]


def test_apply_rejects_manifests_without_identity_or_namespace(simulated_gateway):
    with pytest.raises(PermanentFleetError, match=r"metadata\.name"):
        simulated_gateway.apply(manifests=[{"apiVersion": "v1", "kind": "Namespace"}])
    no_namespace = inference_service()
    del no_namespace["metadata"]["namespace"]
    with pytest.raises(PermanentFleetError, match="namespace is required"):
        simulated_gateway.apply(manifests=[no_namespace])
    assert not SimulatedObject.objects.exists()


def test_a_status_in_the_manifest_of_a_controlled_kind_is_ignored(simulated_gateway, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    claims_ready = {**inference_service(), "status": {"url": "http://forged.example"}}

    (stored,) = simulated_gateway.apply(manifests=[claims_ready])

    assert "status" not in stored
    observed = simulated_gateway.get(**ISVC, name="llm", namespace="acme")
    assert "url" not in observed["status"]


def test_get_returns_the_object_or_none(simulated_gateway):
    simulated_gateway.apply(manifests=[inference_service()])

    found = simulated_gateway.get(**ISVC, name="llm", namespace="acme")

    assert found["metadata"]["namespace"] == "acme"
    assert found["spec"]["predictor"]["model"]["modelFormat"] == {"name": "vLLM"}
    assert simulated_gateway.get(**ISVC, name="llm", namespace="globex") is None
    assert simulated_gateway.get(api_version="v1", kind="Namespace", name="acme") is None


def test_list_is_scoped_by_namespace_and_label_selector(simulated_gateway):
    simulated_gateway.apply(
        manifests=[
            inference_service("llm", "acme", team="nlp"),
            inference_service("ocr", "acme", team="vision"),
            inference_service("llm", "globex", team="nlp"),
        ]
    )

    def names(**kwargs: str) -> list[tuple[str, str]]:
        return [
            (o["metadata"]["namespace"], o["metadata"]["name"])
            for o in simulated_gateway.list(**ISVC, **kwargs)
        ]

    assert names() == [("acme", "llm"), ("acme", "ocr"), ("globex", "llm")]
    assert names(namespace="acme") == [("acme", "llm"), ("acme", "ocr")]
    assert names(label_selector="team=nlp") == [("acme", "llm"), ("globex", "llm")]
    assert names(label_selector="team!=nlp") == [("acme", "ocr")]
    assert names(label_selector="team in (vision, audio)") == [("acme", "ocr")]
    assert names(label_selector="team,!gpu") == names()
    assert names(label_selector="gpu") == []


def test_delete_treats_an_already_missing_object_as_done(simulated_gateway):
    simulated_gateway.apply(manifests=[inference_service()])

    assert simulated_gateway.delete(**ISVC, name="llm", namespace="acme") is True
    assert simulated_gateway.delete(**ISVC, name="llm", namespace="acme") is False
    assert simulated_gateway.get(**ISVC, name="llm", namespace="acme") is None


def test_deleting_a_namespace_deletes_what_it_contains(simulated_gateway):
    simulated_gateway.apply(
        manifests=[
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acme"}},
            inference_service("llm", "acme"),
            inference_service("llm", "globex"),
        ]
    )

    simulated_gateway.delete(api_version="v1", kind="Namespace", name="acme")

    assert [o["metadata"]["namespace"] for o in simulated_gateway.list(**ISVC)] == ["globex"]


def test_an_inference_service_is_progressing_until_the_delay_has_passed(
    simulated_gateway, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=[inference_service()])

    progressing = simulated_gateway.get(**ISVC, name="llm", namespace="acme")
    age("InferenceService", "llm", seconds=21)
    ready = simulated_gateway.get(**ISVC, name="llm", namespace="acme")

    assert condition(progressing, "Ready")["status"] == "False"
    assert "url" not in progressing["status"]
    assert condition(ready, "Ready")["status"] == "True"
    assert ready["status"]["url"] == "http://llm-acme.inference.example.com"
    assert ready["status"]["address"]["url"] == "http://llm-predictor.acme.svc.cluster.local"
    assert simulated_gateway.list(**ISVC)[0]["status"] == ready["status"]


def test_a_new_spec_restarts_the_controller(simulated_gateway, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=[inference_service()])
    age("InferenceService", "llm", seconds=60)
    assert (
        condition(simulated_gateway.get(**ISVC, name="llm", namespace="acme"), "Ready")["status"]
        == "True"
    )

    simulated_gateway.apply(manifests=[inference_service(gpus="2")])

    assert (
        condition(simulated_gateway.get(**ISVC, name="llm", namespace="acme"), "Ready")["status"]
        == "False"
    )


def test_reading_a_settled_object_writes_nothing(
    simulated_gateway, settings, django_assert_num_queries
):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    simulated_gateway.apply(manifests=[inference_service()])
    first = simulated_gateway.get(**ISVC, name="llm", namespace="acme")

    with django_assert_num_queries(2):  # the object, and its predictor's pods (as placed)
        second = simulated_gateway.get(**ISVC, name="llm", namespace="acme")

    assert second == first


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acme"}},
            {"phase": "Active"},
        ),
        (
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine",
                "metadata": {"name": "vm", "namespace": "acme"},
                "spec": {"runStrategy": "Always"},
            },
            {"printableStatus": "Running", "ready": True},
        ),
        (
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine",
                "metadata": {"name": "vm", "namespace": "acme"},
                "spec": {"runStrategy": "Halted"},
            },
            {"printableStatus": "Stopped", "ready": False},
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "quota", "namespace": "acme"},
                "spec": {"hard": {"requests.nvidia.com/gpu": "4", "limits.memory": "64Gi"}},
            },
            {
                "hard": {"requests.nvidia.com/gpu": "4", "limits.memory": "64Gi"},
                "used": {"requests.nvidia.com/gpu": "0", "limits.memory": "0"},
            },
        ),
        (
            {
                "apiVersion": "slinky.slurm.net/v1beta1",
                "kind": "NodeSet",
                "metadata": {"name": "gpu", "namespace": "acme"},
                "spec": {"replicas": 2},
            },
            {"replicas": 2, "readyReplicas": 2},
        ),
    ],
    ids=["namespace", "vm-running", "vm-halted", "resourcequota", "slurm-nodeset"],
)
def test_known_kinds_get_their_controllers_ready_status(
    simulated_gateway, settings, manifest, expected
):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    simulated_gateway.apply(manifests=[manifest])

    meta = manifest["metadata"]
    (obj,) = simulated_gateway.list(
        api_version=manifest["apiVersion"], kind=manifest["kind"], namespace=meta.get("namespace")
    )

    assert {key: obj["status"][key] for key in expected} == expected


@pytest.mark.parametrize(
    ("api_version", "kind", "condition_type"),
    [
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue", "Active"),
        ("slinky.slurm.net/v1beta1", "Controller", "Ready"),
        ("slinky.slurm.net/v1beta1", "LoginSet", "Ready"),
        ("helm.toolkit.fluxcd.io/v2", "HelmRelease", "Ready"),
    ],
)
def test_conditions_turn_true_after_the_delay(
    simulated_gateway, settings, api_version, kind, condition_type
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(
        manifests=[
            {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": "x", "namespace": "acme"},
                "spec": {},
            }
        ]
    )
    read = {"api_version": api_version, "kind": kind, "name": "x", "namespace": "acme"}

    before = simulated_gateway.get(**read)
    age(kind, "x", seconds=20)
    after = simulated_gateway.get(**read)

    assert condition(before, condition_type)["status"] != "True"
    assert condition(after, condition_type)["status"] == "True"


def test_a_ready_helm_release_writes_the_vcluster_kubeconfig_secret(simulated_gateway, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=[helm_release("team-a")])
    secret = {"api_version": "v1", "kind": "Secret", "name": "vc-team-a", "namespace": "acme"}
    release = {
        "api_version": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "name": "team-a",
        "namespace": "acme",
    }

    simulated_gateway.get(**release)
    assert simulated_gateway.get(**secret) is None
    age("HelmRelease", "team-a", seconds=30)
    simulated_gateway.get(**release)
    stored = simulated_gateway.get(**secret)

    kubeconfig = base64.b64decode(stored["data"]["config"]).decode()
    assert "kind: Config" in kubeconfig
    assert "server: https://team-a.acme.svc:443" in kubeconfig
    assert simulated_gateway.delete(**release) is True
    assert simulated_gateway.get(**secret) is None


def test_nodes_are_listed_by_gpu_labels_and_cordoned_by_merge_patch(simulated_gateway):
    simulated_gateway.apply(
        manifests=[
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "rtx-1", "labels": GFD_LABELS},
                "status": {"capacity": {"nvidia.com/gpu": "1"}},
            },
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "cpu-1", "labels": {"kubernetes.io/os": "linux"}},
            },
        ]
    )

    gpu_nodes = simulated_gateway.list_nodes(
        label_selector="nvidia.com/gpu.product=NVIDIA-RTX-4000-Ada-Generation"
    )
    cordoned = simulated_gateway.patch_node(name="rtx-1", patch={"spec": {"unschedulable": True}})
    uncordoned = simulated_gateway.patch_node(name="rtx-1", patch={"spec": {"unschedulable": None}})

    assert [n["metadata"]["name"] for n in gpu_nodes] == ["rtx-1"]
    assert gpu_nodes[0]["status"] == {"capacity": {"nvidia.com/gpu": "1"}}  # kubelet's, kept
    assert cordoned["spec"] == {"unschedulable": True}
    assert cordoned["metadata"]["labels"] == GFD_LABELS
    assert uncordoned["spec"] == {}
    assert int(uncordoned["metadata"]["resourceVersion"]) == 3
    with pytest.raises(PermanentFleetError) as missing:
        simulated_gateway.patch_node(name="ghost", patch={"spec": {"unschedulable": True}})
    assert missing.value.status == 404


def test_evict_pod_removes_the_pod(simulated_gateway):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-0", "namespace": "acme"}}
    simulated_gateway.apply(manifests=[pod])

    simulated_gateway.evict_pod(name="train-0", namespace="acme")
    simulated_gateway.evict_pod(name="train-0", namespace="acme")

    assert (
        simulated_gateway.get(api_version="v1", kind="Pod", name="train-0", namespace="acme")
        is None
    )


# --- the workload operators: what controllers make, and the statuses they write ---------------
# Manifests come from the workload kinds themselves, so the simulated controllers are played
# on exactly what the portal sends; statuses are checked against the vendored CRD schemas.

H100 = "gpu:nvidia-h100-80gb"
A100_MIG = "mig:nvidia-a100-80gb:1g.10gb"
OFFERS = (
    GpuOffer(H100, "NVIDIA H100 80GB HBM3 GPUs", 8),
    GpuOffer(A100_MIG, "NVIDIA A100 SXM4 80GB MIG 1g.10gb", 56),
)
LAUNCH = LaunchContext(
    isolation="shared",
    quota={H100: 16, A100_MIG: 28, "cpu": 256, "memory-gib": 2048, "storage-gib": 1000},
    gpu_offers=OFFERS,
    catalog={"vm_images": {"ubuntu": {"label": "Ubuntu 24.04 LTS",
                                      "container_disk": "quay.io/containerdisks/ubuntu:24.04",
                                      "min_disk_gib": 10, "default_user": "ubuntu"}}},
)
VM_SPEC = {"image": "ubuntu", "cpu": 4, "memory_gib": 16, "disk_gib": 50, "gpu": H100, "gpus": 1,
           "ssh_public_key": ed25519_public("alice@laptop")}
SLURM_SPEC = {"workers": 2, "gpu": A100_MIG, "gpus_per_worker": 1, "cpu_per_worker": 4,
              "memory_gib_per_worker": 16, "accounting": True, "rest_api": True}
READ = {"namespace": "tenant-acme"}


def build(kind: str, name: str, workload_id: int = 7) -> BuildContext:
    return BuildContext(workload_id=workload_id, name=name, kind=kind, tenant_slug="acme",
                        namespace="tenant-acme", isolation="shared")


def manifests(kind: str, name: str, spec: dict, workload_id: int = 7) -> list[dict]:
    entry = KINDS[kind].module
    return entry.manifests(entry.validate(spec, LAUNCH), build(kind, name, workload_id))


def objects(kind: str) -> dict[str, dict]:
    return {row.name: row.body for row in SimulatedObject.objects.filter(kind=kind)}


def schema_valid(obj: dict) -> dict:
    """The object as read back must be one its CRD (status included) accepts."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    assert manifest_errors({**obj, "metadata": meta}) == []
    return obj


def nodes(gateway, *specs: tuple[str, dict, dict]) -> None:
    gateway.apply(manifests=[
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
         "spec": spec}
        for name, labels, spec in specs
    ])


H100_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
MIG_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
              "nvidia.com/mig-1g.10gb.count": "56"}


def test_create_makes_an_object_once_and_never_overwrites_it(simulated_gateway):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "key", "namespace": "a"},
              "data": {"k": "b25l"}}

    assert simulated_gateway.create(manifest=secret) is True
    assert simulated_gateway.create(manifest={**secret, "data": {"k": "dHdv"}}) is False

    stored = simulated_gateway.get(api_version="v1", kind="Secret", name="key", namespace="a")
    assert stored["data"] == {"k": "b25l"}
    assert stored["metadata"]["resourceVersion"] == "1"


def test_deleting_an_owner_deletes_its_dependents_and_theirs(simulated_gateway):
    def obj(kind, name, owner=None):
        meta = {"name": name, "namespace": "acme"}
        if owner:
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner["kind"],
                                        "name": owner["metadata"]["name"],
                                        "uid": owner["metadata"]["uid"], "controller": True}]
        (stored,) = simulated_gateway.apply(manifests=[
            {"apiVersion": "apps/v1" if kind != "Pod" else "v1", "kind": kind, "metadata": meta}
        ])
        return stored

    deployment = obj("Deployment", "web")
    replica_set = obj("ReplicaSet", "web-5d8f", owner=deployment)
    obj("Pod", "web-5d8f-x2k9q", owner=replica_set)
    other = obj("Deployment", "db")
    obj("Pod", "db-0", owner=other)

    assert simulated_gateway.delete(api_version="apps/v1", kind="Deployment", name="web",
                                    namespace="acme") is True

    assert sorted(SimulatedObject.objects.values_list("kind", "name")) == [
        ("Deployment", "db"), ("Pod", "db-0")
    ]


def test_a_vcluster_release_installs_its_control_plane_then_writes_the_kubeconfig(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=manifests("vcluster", "dev", {}))
    release = {"api_version": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "name": "dev",
               **READ}
    secret = {"api_version": "v1", "kind": "Secret", "name": "vc-dev", **READ}

    installing = schema_valid(simulated_gateway.get(**release))
    control_plane = simulated_gateway.get(api_version="apps/v1", kind="StatefulSet", name="dev",
                                          **READ)
    assert condition(installing, "Ready")["status"] == "Unknown"
    assert condition(installing, "Reconciling")["reason"] == "Progressing"
    assert "history" not in installing["status"]
    assert control_plane["status"]["readyReplicas"] == 0
    assert control_plane["metadata"]["annotations"]["meta.helm.sh/release-name"] == "dev"
    assert simulated_gateway.get(**secret) is None

    fleet_clock.advance(20)
    ready = schema_valid(simulated_gateway.get(**release))
    stored = simulated_gateway.get(**secret)

    assert condition(ready, "Ready")["reason"] == "InstallSucceeded"
    (deployed,) = ready["status"]["history"]
    assert (deployed["status"], deployed["version"], deployed["chartVersion"]) == (
        "deployed", 1, vcluster.CHART_VERSION
    )
    assert simulated_gateway.get(api_version="apps/v1", kind="StatefulSet", name="dev",
                                 **READ)["status"]["readyReplicas"] == 1
    kubeconfig = vcluster.kubeconfig_from_secret(stored)
    assert f"server: {vcluster.server_url('dev', 'tenant-acme')}" in kubeconfig
    assert "current-context: dev" in kubeconfig
    seen = vcluster.KIND.observe(
        {("helm.toolkit.fluxcd.io/v2", "HelmRelease", "dev"): ready,
         ("v1", "Secret", "vc-dev"): stored,
         ("apps/v1", "StatefulSet", "dev"): simulated_gateway.get(
             api_version="apps/v1", kind="StatefulSet", name="dev", **READ)},
        vcluster.KIND.validate({}, LAUNCH), build("vcluster", "dev"),
    )
    assert seen.state == "ready" and seen.details["helm_revision"] == 1

    assert simulated_gateway.delete(**release) is True  # Helm uninstalls the chart's objects
    assert sorted(SimulatedObject.objects.values_list("kind", "name")) == [
        ("HelmRepository", "dev-charts")
    ]


def test_a_vcluster_upgrade_keeps_the_deployed_release_until_the_new_one_is_up(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=manifests("vcluster", "dev", {}))
    fleet_clock.advance(30)
    simulated_gateway.list(api_version="helm.toolkit.fluxcd.io/v2", kind="HelmRelease")

    simulated_gateway.apply(manifests=manifests("vcluster", "dev", {"cpu": 4}))
    upgrading = schema_valid(simulated_gateway.get(
        api_version="helm.toolkit.fluxcd.io/v2", kind="HelmRelease", name="dev", **READ))
    fleet_clock.advance(20)
    upgraded = schema_valid(simulated_gateway.get(
        api_version="helm.toolkit.fluxcd.io/v2", kind="HelmRelease", name="dev", **READ))

    assert upgrading["status"]["lastAttemptedReleaseAction"] == "upgrade"
    assert [(h["version"], h["status"]) for h in upgrading["status"]["history"]] == [
        (1, "deployed")
    ]
    assert condition(upgraded, "Ready")["reason"] == "UpgradeSucceeded"
    assert [(h["version"], h["status"]) for h in upgraded["status"]["history"]] == [
        (2, "deployed"), (1, "superseded")
    ]
    control_plane = simulated_gateway.get(api_version="apps/v1", kind="StatefulSet", name="dev",
                                          **READ)
    assert control_plane["spec"]["template"]["spec"]["containers"][0]["resources"][
        "limits"]["cpu"] == "4"


def test_an_inference_service_downloads_then_loads_its_model_then_serves(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    spec = {"model_uri": "hf://Qwen/Qwen2.5-7B-Instruct", "gpu": H100, "min_replicas": 2,
            "max_replicas": 3}
    simulated_gateway.apply(manifests=manifests("inference", "chat", spec))
    read = {**ISVC, "name": "chat", **READ}

    states = []
    for _ in range(3):
        obj = schema_valid(simulated_gateway.get(**read))
        states.append((condition(obj, "Ready")["status"],
                       obj["status"]["modelStatus"]["states"]["targetModelState"]))
        fleet_clock.advance(10)

    assert states == [("False", "Pending"), ("False", "Loading"), ("True", "Loaded")]
    ready = simulated_gateway.get(**read)["status"]
    assert ready["address"]["url"] == inference.cluster_url("chat", "tenant-acme", "cluster.local")
    assert ready["modelStatus"]["copies"]["totalCopies"] == 2
    assert ready["deploymentMode"] == "Standard"


def test_an_inference_service_whose_model_does_not_exist_fails_in_kserves_words(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    spec = {"model_uri": "hf://meta-llama/Llama-4-Scout-does-not-exist", "gpu": H100}
    simulated_gateway.apply(manifests=manifests("inference", "chat", spec))
    read = {**ISVC, "name": "chat", **READ}

    loading = simulated_gateway.get(**read)
    fleet_clock.advance(20)
    failed = schema_valid(simulated_gateway.get(**read))

    assert "lastFailureInfo" not in loading["status"]["modelStatus"]
    info = failed["status"]["modelStatus"]["lastFailureInfo"]
    assert info["reason"] == "ModelLoadFailed"
    assert (
        "Repository Not Found for url: https://huggingface.co/api/models/meta-llama/"
        "Llama-4-Scout-does-not-exist/revision/main"
    ) in info["message"]
    seen = inference.KIND.observe({(*ISVC.values(), "chat"): failed}, {},
                                  build("inference", "chat"))
    assert (seen.state, seen.reason) == ("failed", "ModelLoadFailed")
    assert "(exit code 1)" in seen.message


VM_READ = {"api_version": "kubevirt.io/v1", "kind": "VirtualMachine", "name": "box", **READ}
VMI_READ = {**VM_READ, "kind": "VirtualMachineInstance"}


def test_a_vm_imports_its_disk_then_boots_its_instance(simulated_gateway, fleet_clock, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    nodes(simulated_gateway, ("h100-a", H100_LABELS, {}), ("mig-a", MIG_LABELS, {}))
    simulated_gateway.apply(manifests=manifests("vm", "box", VM_SPEC))

    provisioning = schema_valid(simulated_gateway.get(**VM_READ))
    disk = objects("DataVolume")["box-root"]
    fleet_clock.advance(10)
    starting = schema_valid(simulated_gateway.get(**VM_READ))
    fleet_clock.advance(10)
    running = schema_valid(simulated_gateway.get(**VM_READ))
    instance = simulated_gateway.get(**VMI_READ)

    assert provisioning["status"]["printableStatus"] == "Provisioning"
    assert disk["status"]["phase"] == "ImportInProgress"
    assert disk["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == "7"
    assert starting["status"]["printableStatus"] == "Starting"
    assert running["status"]["printableStatus"] == "Running"
    assert condition(running, "Ready")["status"] == "True"
    assert instance["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == "7"
    assert instance["status"]["nodeName"] == "h100-a"  # not the MIG one
    (owner,) = instance["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("VirtualMachine", running["metadata"]["uid"])
    # virt-controller runs it in a launcher pod: that is what the scheduler bound.
    (launcher,) = objects("Pod").values()
    assert launcher["metadata"]["name"].startswith("virt-launcher-box-")
    assert launcher["spec"]["nodeName"] == "h100-a"
    assert launcher["metadata"]["ownerReferences"][0]["uid"] == instance["metadata"]["uid"]
    assert launcher["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == "7"
    assert launcher["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "4", "memory": "16Gi", "nvidia.com/GH100_H100_SXM5_80GB": "1"}
    assert manifest_errors({k: v for k, v in launcher.items() if k != "status"}) == []
    assert instance["status"]["interfaces"][0]["ipAddress"].startswith("10.244.")
    seen = vm.KIND.observe(
        {("kubevirt.io/v1", "VirtualMachine", "box"): running,
         ("kubevirt.io/v1", "VirtualMachineInstance", "box"): instance},
        VM_SPEC, build("vm", "box"),
    )
    assert seen.state == "ready" and seen.details["ip"]


def test_a_vm_nobody_looked_at_is_as_far_along_as_on_a_cluster(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=manifests("vm", "box", VM_SPEC))
    fleet_clock.advance(60)

    first_look = simulated_gateway.get(**VM_READ)

    assert first_look["status"]["printableStatus"] == "Running"
    assert objects("DataVolume")["box-root"]["status"]["phase"] == "Succeeded"


def test_halting_a_vm_stops_its_instance_and_starting_it_boots_a_new_one(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=manifests("vm", "box", VM_SPEC))
    fleet_clock.advance(60)
    simulated_gateway.get(**VM_READ)  # reading the VM plays its controller (as a list does)
    first = simulated_gateway.get(**VMI_READ)

    simulated_gateway.apply(manifests=manifests("vm", "box", {**VM_SPEC, "running": False}))
    stopped = schema_valid(simulated_gateway.get(**VM_READ))
    gone = simulated_gateway.get(**VMI_READ)
    simulated_gateway.apply(manifests=manifests("vm", "box", VM_SPEC))
    booting = simulated_gateway.get(**VM_READ)
    fleet_clock.advance(10)
    simulated_gateway.get(**VM_READ)
    again = simulated_gateway.get(**VMI_READ)

    assert stopped["status"]["printableStatus"] == "Stopped"
    assert condition(stopped, "Ready")["reason"] == "VMINotExists"
    assert gone is None
    assert booting["status"]["printableStatus"] == "Starting"
    assert again["status"]["phase"] == "Running"
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    assert objects("DataVolume")["box-root"]["metadata"]["uid"]  # the disk is kept


def test_a_restarted_vm_boots_a_new_instance_with_the_restart_annotation(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=manifests("vm", "box", VM_SPEC))
    fleet_clock.advance(60)
    simulated_gateway.get(**VM_READ)
    old = simulated_gateway.get(**VMI_READ)
    restart = vm.power(vm.KIND.validate(VM_SPEC, LAUNCH), "restart")

    simulated_gateway.apply(manifests=vm.KIND.manifests(restart, build("vm", "box")))
    simulated_gateway.get(**VM_READ)
    kept = simulated_gateway.get(**VMI_READ)  # KubeVirt leaves a running VMI on its template
    simulated_gateway.delete(**VMI_READ)  # what the machinery does when needs_restart()
    simulated_gateway.get(**VM_READ)
    fresh = simulated_gateway.get(**VMI_READ)

    annotation = "kubectl.kubernetes.io/restartedAt"
    assert kept["metadata"]["uid"] == old["metadata"]["uid"]
    assert annotation not in kept["metadata"]["annotations"]
    assert fresh["metadata"]["annotations"][annotation] == restart["restarted_at"]
    assert fresh["metadata"]["uid"] != old["metadata"]["uid"]
    assert not vm.needs_restart({("kubevirt.io/v1", "VirtualMachineInstance", "box"): fresh},
                                restart, build("vm", "box"))


def test_a_resized_running_vm_says_it_needs_a_restart(simulated_gateway, fleet_clock, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=manifests("vm", "box", VM_SPEC))
    fleet_clock.advance(60)
    simulated_gateway.get(**VM_READ)

    simulated_gateway.apply(manifests=manifests("vm", "box", {**VM_SPEC, "cpu": 8}))
    resized = simulated_gateway.get(**VM_READ)

    assert resized["status"]["printableStatus"] == "Running"
    assert condition(resized, "RestartRequired")["status"] == "True"


def test_reading_a_settled_vm_writes_nothing(
    simulated_gateway, settings, django_assert_num_queries
):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    simulated_gateway.apply(manifests=manifests("vm", "box", VM_SPEC))
    first = simulated_gateway.get(**VM_READ)
    versions = dict(SimulatedObject.objects.values_list("name", "resource_version"))

    with django_assert_num_queries(3):  # the VM, what its controller made, the VMI's pod
        second = simulated_gateway.get(**VM_READ)

    assert second == first
    assert dict(SimulatedObject.objects.values_list("name", "resource_version")) == versions


SLINKY = "slinky.slurm.net/v1beta1"


def test_the_slurm_operator_runs_its_parts_and_a_worker_pod_per_replica(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    nodes(simulated_gateway, ("h100-a", H100_LABELS, {}), ("mig-a", MIG_LABELS, {}))
    simulated_gateway.apply(manifests=manifests("slurm", "train", SLURM_SPEC))
    for kind in ("Controller", "LoginSet", "RestApi", "Accounting", "NodeSet"):
        simulated_gateway.list(api_version=SLINKY, kind=kind, namespace="tenant-acme")

    pods = objects("Pod")
    apps = {**objects("StatefulSet"), **objects("Deployment")}
    fleet_clock.advance(20)
    nodeset = schema_valid(simulated_gateway.get(api_version=SLINKY, kind="NodeSet",
                                                 name="train-workers", **READ))

    assert sorted(pods) == ["train-workers-0", "train-workers-1"]
    assert sorted(apps) == ["train-accounting", "train-controller", "train-login",
                            "train-mariadb", "train-restapi"]
    worker = pods["train-workers-0"]
    assert worker["spec"]["nodeName"] == "mig-a"  # where its MIG slice is
    assert worker["metadata"]["labels"]["app.kubernetes.io/instance"] == "train-workers"
    assert worker["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == "7"
    assert worker["metadata"]["ownerReferences"][0]["kind"] == "NodeSet"
    assert apps["train-controller"]["metadata"]["labels"]["portal.ai-factory.io/workload-id"] == "7"
    assert nodeset["status"]["readyReplicas"] == 2
    for name in ("train-controller", "train-accounting", "train-mariadb"):
        assert simulated_gateway.get(api_version="apps/v1", kind="StatefulSet", name=name,
                                     **READ)["status"]["readyReplicas"] == 1


def test_scaling_a_nodeset_adds_workers_that_start_and_removes_the_highest(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=manifests("slurm", "train", SLURM_SPEC))
    read = {"api_version": SLINKY, "kind": "NodeSet", "name": "train-workers", **READ}
    fleet_clock.advance(30)
    simulated_gateway.get(**read)

    simulated_gateway.apply(manifests=manifests("slurm", "train", {**SLURM_SPEC, "workers": 4}))
    growing = simulated_gateway.get(**read)["status"]
    fleet_clock.advance(20)
    grown = simulated_gateway.get(**read)["status"]
    simulated_gateway.apply(manifests=manifests("slurm", "train", {**SLURM_SPEC, "workers": 1}))
    shrunk = simulated_gateway.get(**read)["status"]

    assert (growing["replicas"], growing["readyReplicas"]) == (4, 2)
    assert (grown["replicas"], grown["readyReplicas"]) == (4, 4)
    assert (shrunk["replicas"], shrunk["readyReplicas"]) == (1, 1)
    assert sorted(objects("Pod")) == ["train-workers-0"]


def test_a_worker_no_node_can_take_waits_with_the_schedulers_reason(simulated_gateway, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    nodes(simulated_gateway, ("h100-a", H100_LABELS, {}),
          ("mig-a", MIG_LABELS, {"unschedulable": True}))
    simulated_gateway.apply(manifests=manifests("slurm", "train", SLURM_SPEC))

    simulated_gateway.get(api_version=SLINKY, kind="NodeSet", name="train-workers", **READ)
    pod = simulated_gateway.get(api_version="v1", kind="Pod", name="train-workers-0", **READ)

    assert "nodeName" not in pod["spec"]
    scheduled = condition(pod, "PodScheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert scheduled["message"].startswith("0/2 nodes are available: ")
    assert "1 node(s) were unschedulable" in scheduled["message"]


def test_deleting_the_slurm_crs_takes_everything_the_operator_made(simulated_gateway, settings):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    applied = manifests("slurm", "train", SLURM_SPEC)
    simulated_gateway.apply(manifests=applied)
    for kind in ("Controller", "LoginSet", "RestApi", "Accounting", "NodeSet"):
        simulated_gateway.list(api_version=SLINKY, kind=kind)

    for manifest in reversed(applied):
        simulated_gateway.delete(api_version=manifest["apiVersion"], kind=manifest["kind"],
                                 name=manifest["metadata"]["name"], namespace="tenant-acme")

    assert not SimulatedObject.objects.exists()


def test_every_status_the_simulated_controllers_write_is_one_the_crds_accept(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    nodes(simulated_gateway, ("h100-a", H100_LABELS, {}), ("mig-a", MIG_LABELS, {}))
    for kind, spec in (
        ("vcluster", {}),
        ("inference", {"model_uri": "hf://Qwen/Qwen2.5-7B-Instruct", "gpu": H100}),
        ("vm", VM_SPEC),
        ("slurm", SLURM_SPEC),
    ):
        simulated_gateway.apply(manifests=manifests(kind, f"x-{kind}", spec))
    custom = {(row.api_version, row.kind) for row in SimulatedObject.objects.all()
              if "." in row.api_version.partition("/")[0]}

    checked = set()
    for _ in range(3):
        for api_version, kind in sorted(custom):
            for obj in simulated_gateway.list(api_version=api_version, kind=kind):
                schema_valid(obj)
                checked.add((kind, bool(obj.get("status"))))
        fleet_clock.advance(10)

    assert {kind for kind, has_status in checked if has_status} == {
        "HelmRepository", "HelmRelease", "InferenceService", "VirtualMachine",
        "Controller", "NodeSet", "LoginSet", "RestApi", "Accounting",
    }


def test_resource_quota_counts_the_namespaces_objects_as_kubernetes_does(
    simulated_gateway, settings
):
    """An object count quota (`count/<plural>.<group>`) counts the objects of its namespace:
    the portal compares it with the workloads it holds, so a 0 here would read as a disagreement."""
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    hard = {
        "count/virtualmachines.kubevirt.io": "3",
        "count/inferenceservices.serving.kserve.io": "2",
    }
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "spec": {"runStrategy": "Halted"},
    }
    simulated_gateway.apply(
        manifests=[
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "quota", "namespace": "acme"},
                "spec": {"hard": hard},
            },
            vm | {"metadata": {"name": "one", "namespace": "acme"}},
            vm | {"metadata": {"name": "two", "namespace": "acme"}},
            vm | {"metadata": {"name": "elsewhere", "namespace": "globex"}},
        ]
    )

    quota = simulated_gateway.get(
        api_version="v1", kind="ResourceQuota", name="quota", namespace="acme"
    )

    assert quota["status"]["used"] == {
        "count/virtualmachines.kubevirt.io": "2",
        "count/inferenceservices.serving.kserve.io": "0",
    }


# --- Kubernetes' own controllers: a StatefulSet the portal applies runs its pods --------------


def stateful_set(name: str = "nb-lab", *, replicas: int = 1, image: str = "lab:1",
                 owned: bool = False) -> dict:
    """A StatefulSet as the portal applies one (a notebook's): its pods carry its labels."""
    meta: dict = {"name": name, "namespace": "acme", "labels": {"team": "nlp"}}
    if owned:
        meta["ownerReferences"] = [{"apiVersion": "slinky.slurm.net/v1beta1", "kind": "Controller",
                                    "name": "x", "uid": "some-uid", "controller": True}]
    labels = {"portal.ai-factory.io/notebook": name, "team": "nlp"}
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta,
        "spec": {
            "replicas": replicas, "serviceName": name,
            "selector": {"matchLabels": {"portal.ai-factory.io/notebook": name}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                {"name": "notebook", "image": image,
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}},
        },
    }


STS = {"api_version": "apps/v1", "kind": "StatefulSet", "namespace": "acme"}


def test_a_stateful_set_runs_its_pod_which_becomes_ready_after_the_delay(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    nodes(simulated_gateway, ("h100-a", H100_LABELS, {}))
    simulated_gateway.apply(manifests=[stateful_set()])

    starting = simulated_gateway.get(**STS, name="nb-lab")["status"]
    pod = simulated_gateway.get(api_version="v1", kind="Pod", name="nb-lab-0", namespace="acme")
    fleet_clock.advance(20)
    started = simulated_gateway.get(**STS, name="nb-lab")["status"]

    assert (starting["replicas"], starting["readyReplicas"]) == (1, 0)
    assert (started["replicas"], started["readyReplicas"]) == (1, 1)
    assert pod["spec"]["nodeName"] == "h100-a"
    assert pod["metadata"]["labels"]["portal.ai-factory.io/notebook"] == "nb-lab"
    assert pod["metadata"]["labels"]["controller-revision-hash"] == started["currentRevision"]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert pod["spec"]["containers"][0]["image"] == "lab:1"


def test_a_stateful_set_at_zero_replicas_deletes_its_pod_and_gives_its_gpu_back(
    simulated_gateway, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    one_gpu = {**H100_LABELS, "nvidia.com/gpu.count": "1"}
    nodes(simulated_gateway, ("h100-a", one_gpu, {}))
    simulated_gateway.apply(manifests=[stateful_set("nb-one"), stateful_set("nb-two")])
    simulated_gateway.list(**STS)
    waiting = simulated_gateway.get(api_version="v1", kind="Pod", name="nb-two-0",
                                    namespace="acme")

    simulated_gateway.apply(manifests=[stateful_set("nb-one", replicas=0)])
    stopped = simulated_gateway.get(**STS, name="nb-one")["status"]
    simulated_gateway.get(**STS, name="nb-two")

    assert "nodeName" not in waiting["spec"]  # the one GPU is nb-one's
    assert (stopped["replicas"], stopped["readyReplicas"]) == (0, 0)
    assert "nb-one-0" not in objects("Pod")
    assert objects("Pod")["nb-two-0"]["spec"]["nodeName"] == "h100-a"
    assert simulated_gateway.get(**STS, name="nb-two")["status"]["readyReplicas"] == 1


def test_a_changed_template_replaces_the_pod_and_starting_again_makes_a_new_one(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=[stateful_set()])
    fleet_clock.advance(30)
    simulated_gateway.get(**STS, name="nb-lab")
    first = objects("Pod")["nb-lab-0"]

    simulated_gateway.apply(manifests=[stateful_set(image="lab:2")])
    replaced = simulated_gateway.get(**STS, name="nb-lab")["status"]
    pod = objects("Pod")["nb-lab-0"]
    simulated_gateway.apply(manifests=[stateful_set(image="lab:2", replicas=0)])
    simulated_gateway.get(**STS, name="nb-lab")
    gone = dict(objects("Pod"))
    simulated_gateway.apply(manifests=[stateful_set(image="lab:2")])
    simulated_gateway.get(**STS, name="nb-lab")

    assert pod["metadata"]["uid"] != first["metadata"]["uid"]
    assert pod["spec"]["containers"][0]["image"] == "lab:2"
    assert replaced["readyReplicas"] == 0  # the new pod is starting
    assert gone == {}
    assert objects("Pod")["nb-lab-0"]["metadata"]["uid"] != pod["metadata"]["uid"]


def test_an_operators_stateful_set_comes_up_after_the_delay_without_pods(
    simulated_gateway, fleet_clock, settings
):
    settings.FLEET_SIMULATED_READY_SECONDS = 20
    simulated_gateway.apply(manifests=[stateful_set(owned=True)])

    starting = simulated_gateway.get(**STS, name="nb-lab")["status"]
    fleet_clock.advance(20)
    started = simulated_gateway.get(**STS, name="nb-lab")["status"]

    assert (starting["readyReplicas"], started["readyReplicas"]) == (0, 1)
    assert not objects("Pod")


def test_a_persistent_volume_claim_is_bound_with_what_it_asked_for(simulated_gateway):
    simulated_gateway.apply(manifests=[{
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "home-alice", "namespace": "acme"},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "50Gi"}}},
    }])

    claim = simulated_gateway.get(api_version="v1", kind="PersistentVolumeClaim",
                                  name="home-alice", namespace="acme")

    assert claim["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                               "capacity": {"storage": "50Gi"}}
