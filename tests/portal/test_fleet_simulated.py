"""The simulated fleet: objects in the database, controllers played when objects are read."""

import base64
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from portal.fleet import PermanentFleetError, gateway_override, get_gateway
from portal.fleet.simulated import SimulatedFleetGateway
from portal.models import SimulatedObject

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


def test_get_gateway_defaults_to_the_simulated_fleet(settings):
    settings.FLEET_BACKEND = "simulated"

    assert isinstance(get_gateway(), SimulatedFleetGateway)
    assert get_gateway() is get_gateway()
    replacement = SimulatedFleetGateway()
    with gateway_override(replacement):
        assert get_gateway() is replacement
    assert get_gateway() is not replacement


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
    assert ready["status"]["url"] == "http://llm.acme.example"
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

    with django_assert_num_queries(1):
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
