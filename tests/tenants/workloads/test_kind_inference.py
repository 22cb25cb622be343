"""The inference kind: its InferenceService against KServe's CRD schema and field by field
(whole GPUs, MIG and HAMi shares, shared and dedicated tenants), demand, state read back from
status blocks shaped as KServe 0.20 writes them in Standard mode, scale, connection, and bad
input."""

import copy
import dataclasses
import json
import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inventory.resource_classes import WORKLOAD_KINDS
from tenants.enforcement.manifests import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from tenants.workloads.kinds import inference, schemas
from tenants.workloads.kinds.base import (
    LABEL_KIND,
    LABEL_MANAGED_BY,
    LABEL_TENANT,
    LABEL_WORKLOAD_ID,
    MANAGED_BY,
    RESERVED_FOR_KEY,
    BuildContext,
    GpuOffer,
    LaunchContext,
    SpecError,
)
from tenants.workloads.kinds.naming import DNS1035_LABEL
from tenants.workloads.selectors import admission_labels

KIND = inference.KIND
H100 = "gpu:nvidia-h100-80gb"
L40S = "gpu:nvidia-l40s"
H200 = "gpu:nvidia-h200"
MIG = "mig:nvidia-a100-80gb:1g.10gb"
HAMI = "hami:nvidia-l40s"  # the HAMi share of an L40S: memory and compute
HAMI_MEMORY, HAMI_CORES = "hami:nvidia-l40s:memory-gib", "hami:nvidia-l40s:cores"
HAMI_H100 = "hami:nvidia-h100-80gb"
HAMI_OFFERS = (
    GpuOffer(HAMI_MEMORY, "NVIDIA L40S HAMi GPU memory (GiB)", 44),
    GpuOffer(HAMI_CORES, "NVIDIA L40S HAMi GPU compute (% of a GPU)", 100),
    GpuOffer("hami:nvidia-h100-80gb:memory-gib", "NVIDIA H100 80GB HBM3 HAMi GPU memory", 79),
    GpuOffer("hami:nvidia-h100-80gb:cores", "NVIDIA H100 80GB HBM3 HAMi GPU compute", 100),
)
SHARED = LaunchContext(
    isolation="shared",
    quota={H100: 16, MIG: 14, L40S: 0, HAMI_MEMORY: 96, HAMI_CORES: 200,
           "hami:nvidia-h100-80gb:memory-gib": 40, "cpu": 256, "memory-gib": 2048,
           "count:inference": 4},
    gpu_offers=(
        GpuOffer(H100, "NVIDIA H100 80GB HBM3 GPUs", 8),
        GpuOffer(MIG, "NVIDIA A100 SXM4 80GB MIG 1g.10gb", 7),
        GpuOffer(L40S, "NVIDIA L40S GPUs", 4),
        *HAMI_OFFERS,
    ),
)
DEDICATED = LaunchContext(
    isolation="dedicated",
    quota={H200: 16, MIG: 7, HAMI_MEMORY: 48, HAMI_CORES: 100, "cpu": 768},
    # As if its pool offered partitions and it held quota for them: it still gets none.
    gpu_offers=(GpuOffer(H200, "NVIDIA H200 141GB GPUs", 8), GpuOffer(MIG, "MIG", 7),
                *HAMI_OFFERS),
)
LLAMA = "hf://meta-llama/Llama-3.1-8B-Instruct"


def build(name="chat", isolation="shared", slug="nova", workload_id=73):
    return BuildContext(
        workload_id=workload_id,
        name=name,
        kind="inference",
        tenant_slug=slug,
        namespace=f"tenant-{slug}",
        isolation=isolation,
    )


SHARED_BUILD = build()
DEDICATED_BUILD = build(isolation="dedicated", slug="helix")


def clean(launch=SHARED, **fields):
    return KIND.validate({"model_uri": LLAMA, "gpu": H100, **fields}, launch)


def service(spec=None, ctx=SHARED_BUILD):
    (manifest,) = KIND.manifests(spec or clean(), ctx)
    return manifest


def predictor(manifest):
    return manifest["spec"]["predictor"]


# The contract ----------------------------------------------------------------------------------


def test_the_kind_speaks_the_vocabulary_and_owns_its_inference_service():
    assert KIND.KEY == "inference" and KIND.KEY in WORKLOAD_KINDS
    # The predictor's pods carry its labels (KServe copies them): observed, never applied. Its
    # API keys' Secrets are created once each, outside the applied objects (exposure.py).
    assert KIND.OWNED_KINDS == (("serving.kserve.io/v1beta1", "InferenceService"), ("v1", "Pod"),
                                ("v1", "Secret"))
    manifest = service()
    assert (manifest["apiVersion"], manifest["kind"]) == KIND.OWNED_KINDS[0]


def test_defaults_fill_the_sizes():
    assert clean() == {
        "model_uri": LLAMA,
        "gpu": H100,
        "gpus_per_replica": 1,
        "min_replicas": 1,
        "max_replicas": 1,
        "cpu": 4,
        "memory_gib": 32,
    }


# Manifests -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "ctx"),
    [
        (clean(), SHARED_BUILD),
        (clean(gpus_per_replica=8, min_replicas=0, max_replicas=2), SHARED_BUILD),
        (clean(gpu=MIG, model_uri="pvc://models/llama/8b", max_replicas=7), SHARED_BUILD),
        (clean(DEDICATED, gpu=H200, model_uri="s3://acme-models/qwen/7b/"), DEDICATED_BUILD),
        (clean(gpu=HAMI, gpu_memory_gib=20, gpu_cores=50, max_replicas=3), SHARED_BUILD),
    ],
)
def test_the_inference_service_validates_against_the_kserve_crd(spec, ctx):
    manifest = service(spec, ctx)

    assert schemas.manifest_errors(manifest) == []
    schemas.check_manifests([manifest])


def test_the_schema_check_would_catch_a_bad_quantity():
    manifest = service()
    predictor(manifest)["model"]["resources"]["limits"]["nvidia.com/gpu"] = "two"

    (error,) = schemas.manifest_errors(manifest)
    assert error.startswith("spec.predictor.model.resources.limits.nvidia.com/gpu: 'two' does not")


def test_standard_mode_vllm_runtime_and_the_model_are_set_explicitly():
    manifest = service(clean(model_uri="hf://Qwen/Qwen2.5-7B-Instruct:main"))

    assert manifest["metadata"]["annotations"] == {"serving.kserve.io/deploymentMode": "Standard"}
    model = predictor(manifest)["model"]
    assert model["modelFormat"] == {"name": "vLLM"}
    assert model["runtime"] == "kserve-vllmserver"
    assert model["storageUri"] == "hf://Qwen/Qwen2.5-7B-Instruct:main"
    assert "args" not in model  # one GPU: no tensor parallelism


def test_owner_labels_name_and_namespace():
    metadata = service()["metadata"]

    assert metadata["name"] == "chat"
    assert metadata["namespace"] == "tenant-nova"
    assert metadata["labels"] == {
        LABEL_MANAGED_BY: MANAGED_BY,
        LABEL_TENANT: "nova",
        LABEL_WORKLOAD_ID: "73",
        LABEL_KIND: "inference",
    }


def test_whole_gpus_and_mig_queue_in_the_tenants_local_queue_a_hami_share_in_its_shares_queue():
    queued = dataclasses.replace(
        SHARED_BUILD, admission_labels=admission_labels("inference"),
        shares_admission_labels=admission_labels("inference", queue="shares"))
    for gpu in (H100, MIG):
        labels = service(clean(gpu=gpu), queued)["metadata"]["labels"]
        assert labels[QUEUE_NAME_LABEL] == "default", gpu
        assert labels[PRIORITY_CLASS_LABEL] == "portal-serving", gpu
        assert labels[LABEL_WORKLOAD_ID] == "73"  # the owner labels stay
    # A share's own ClusterQueue meters vGPUs, their memory and compute; at the same priority.
    hami = service(clean(gpu=HAMI, gpu_memory_gib=20, gpu_cores=30), queued)
    assert hami["metadata"]["labels"][QUEUE_NAME_LABEL] == "shares"
    assert hami["metadata"]["labels"][PRIORITY_CLASS_LABEL] == "portal-serving"
    assert hami["metadata"]["labels"][LABEL_WORKLOAD_ID] == "73"


def test_whole_gpus_are_requested_and_limited_with_cpu_and_memory():
    spec = clean(gpus_per_replica=4, cpu=16, memory_gib=128, min_replicas=2, max_replicas=5)
    manifest_predictor = predictor(service(spec))
    resources = manifest_predictor["model"]["resources"]

    assert resources["limits"] == {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "4"}
    assert resources["requests"] == resources["limits"]
    assert manifest_predictor["model"]["args"] == ["--tensor-parallel-size=4"]
    assert (manifest_predictor["minReplicas"], manifest_predictor["maxReplicas"]) == (2, 5)


def test_a_mig_instance_is_its_own_extended_resource_on_the_full_gpus_nodes():
    manifest_predictor = predictor(service(clean(gpu=MIG)))

    assert manifest_predictor["model"]["resources"]["limits"] == {
        "cpu": "4",
        "memory": "32Gi",
        "nvidia.com/mig-1g.10gb": "1",
    }
    assert manifest_predictor["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}


def test_a_hami_share_is_one_vgpu_with_its_memory_and_compute_scheduled_by_hami():
    spec = clean(gpu=HAMI, gpu_memory_gib=20, gpu_cores=30, cpu=8, memory_gib=48)
    manifest_predictor = predictor(service(spec))

    # HAMi's examples/nvidia/default_use.yaml: gpu (vGPUs), gpumem (MiB), gpucores (percent).
    assert manifest_predictor["model"]["resources"]["limits"] == {
        "cpu": "8", "memory": "48Gi", "nvidia.com/gpu": "1", "nvidia.com/gpumem": "20480",
        "nvidia.com/gpucores": "30",
    }
    assert manifest_predictor["model"]["resources"]["requests"] == (
        manifest_predictor["model"]["resources"]["limits"]
    )
    assert manifest_predictor["schedulerName"] == "hami-scheduler"
    # HAMi picks the card by the type its device plugin registered; GFD's product label picks
    # the nodes, and Kueue's flavor (hami-nvidia-l40s) by it.
    assert manifest_predictor["annotations"] == {"nvidia.com/use-gputype": "NVIDIA L40S"}
    assert manifest_predictor["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    assert "tolerations" not in manifest_predictor
    assert "args" not in manifest_predictor["model"]  # one vGPU: no tensor parallelism


def test_a_hami_share_is_never_built_for_a_dedicated_tenant_even_from_a_stored_spec():
    spec = clean(gpu=HAMI, gpu_memory_gib=20, gpu_cores=30)
    mig = clean(gpu=MIG)

    for stored in (spec, mig):
        with pytest.raises(SpecError) as refused:
            KIND.manifests(stored, DEDICATED_BUILD)
        assert "dedicated" in " ".join(refused.value.fields["gpu"])


def test_a_shared_tenant_selects_the_gpu_model_and_tolerates_nothing():
    manifest_predictor = predictor(service())

    assert manifest_predictor["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert "tolerations" not in manifest_predictor


def test_a_dedicated_tenant_lands_only_on_its_reserved_nodes():
    manifest_predictor = predictor(service(clean(DEDICATED, gpu=H200), DEDICATED_BUILD))

    assert manifest_predictor["nodeSelector"] == {
        "nvidia.com/gpu.product": "NVIDIA-H200",
        RESERVED_FOR_KEY: "helix",
    }
    assert manifest_predictor["tolerations"] == [
        {"key": RESERVED_FOR_KEY, "operator": "Equal", "value": "helix", "effect": "NoSchedule"}
    ]


def test_names_stay_valid_for_what_kserve_derives_from_them():
    for name in ("a" * 63, "7b-chat", "x" * 48, "y" * 49):
        manifest = service(ctx=build(name=name))
        isvc = manifest["metadata"]["name"]
        assert DNS1035_LABEL.fullmatch(isvc)
        assert len(f"{isvc}-predictor") <= 63
        assert len(f"isvc.{isvc}-predictor") <= 63
    assert inference.service_name("x" * 48) == "x" * 48
    assert inference.service_name("y" * 49) != inference.service_name("y" * 50)


# Demand ----------------------------------------------------------------------------------------


def test_demand_reserves_for_the_most_replicas():
    spec = clean(gpus_per_replica=2, min_replicas=0, max_replicas=3, cpu=8, memory_gib=64)

    assert KIND.demand(spec) == {H100: 6, "cpu": 24, "memory-gib": 192, "count:inference": 1}


def test_demand_counts_mig_instances_in_their_own_class():
    assert KIND.demand(clean(gpu=MIG, max_replicas=4))[MIG] == 4


def test_demand_counts_a_hami_share_as_memory_and_compute_for_the_most_replicas():
    spec = clean(gpu=HAMI, gpu_memory_gib=12, gpu_cores=25, min_replicas=1, max_replicas=3)

    assert spec["gpu_memory_gib"] == 12 and spec["gpu_cores"] == 25
    assert KIND.demand(spec) == {
        HAMI_MEMORY: 36, HAMI_CORES: 75, "cpu": 12, "memory-gib": 96, "count:inference": 1,
    }
    assert "gpu_memory_gib" not in clean()  # a whole GPU has no share to size


# Observe ---------------------------------------------------------------------------------------

KEY = ("serving.kserve.io/v1beta1", "InferenceService", "chat")
URL = "http://chat-tenant-nova.inference.example.com"
CLUSTER_URL = "http://chat-predictor.tenant-nova.svc.cluster.local"
RS = "chat-predictor-6f9c7d5b8d"


def cond(kind, status, reason=None, message=None, at="2026-11-30T10:12:41Z"):
    found = {"type": kind, "status": status, "lastTransitionTime": at}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


def kserve(status, spec=None):
    """The object as read back: what the portal sent, plus KServe's defaults and status."""
    obj = copy.deepcopy(service(spec))
    obj["metadata"] |= {"generation": 1, "uid": "0d6c1b9e-8f5a-4a4b-b3f0-5a2e9c1d7e11"}
    obj["spec"]["predictor"]["model"]["name"] = ""
    obj["status"] = status
    assert schemas.manifest_errors(obj) == [], "the status block must be one KServe can write"
    return obj


def serving_status():
    return {
        "address": {"url": CLUSTER_URL},
        "clusterServingRuntimeName": "kserve-vllmserver",
        "components": {"predictor": {"url": "http://chat-predictor-tenant-nova.example.com"}},
        "conditions": [
            cond("IngressReady", "True", at="2026-11-30T10:20:03Z"),
            cond(
                "PredictorReady",
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{RS}" has successfully progressed.',
                at="2026-11-30T10:20:02Z",
            ),
            cond("Ready", "True", at="2026-11-30T10:20:03Z"),
        ],
        "deploymentMode": "Standard",
        "modelStatus": {
            "copies": {"failedCopies": 0, "totalCopies": 2},
            "states": {"activeModelState": "Loaded", "targetModelState": "Loaded"},
            "transitionStatus": "UpToDate",
        },
        "observedGeneration": 1,
        "url": URL,
    }


def loading_status():
    return {
        "clusterServingRuntimeName": "kserve-vllmserver",
        "components": {"predictor": {}},
        "conditions": [
            cond("IngressReady", "False", "Predictor ingress not created"),
            cond(
                "PredictorReady",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            ),
            cond(
                "Ready",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            ),
        ],
        "deploymentMode": "Standard",
        "modelStatus": {
            "copies": {"failedCopies": 0, "totalCopies": 0},
            "states": {"activeModelState": "", "targetModelState": "Loading"},
            "transitionStatus": "InProgress",
        },
        "observedGeneration": 1,
    }


def observe(obj=None, spec=None):
    objects = {KEY: obj} if obj is not None else {}
    return KIND.observe(objects, spec or clean(), SHARED_BUILD)


def _predictor_pod(name, *, gated):
    """A replica as the cluster holds it: Kueue's admission gate on while it waits."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "tenant-nova",
                        "labels": {"serving.kserve.io/inferenceservice": "chat"}},
           "spec": {"containers": [{"name": "kserve-container"}]},
           "status": {"phase": "Pending"}}
    if gated:
        pod["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
        pod["status"]["conditions"] = [cond("PodScheduled", "False", "SchedulingGated",
                                            "Scheduling is blocked due to non-empty scheduling "
                                            "gates")]
    return pod


def test_replicas_kueue_holds_in_the_queue_say_so_and_are_no_fault():
    pods = {("v1", "Pod", f"chat-predictor-{n}"): _predictor_pod(f"chat-predictor-{n}", gated=True)
            for n in range(2)}
    seen = KIND.observe({KEY: kserve(loading_status()), **pods}, clean(), SHARED_BUILD)
    assert (seen.state, seen.reason) == ("progressing", "Queued")
    assert seen.message.startswith("2 replicas waiting in the tenant's queue: Kueue admits them")
    assert seen.details["replicas_queued"] == 2

    # Serving already, one more replica waits: still ready, the wait in its figures.
    pods = {("v1", "Pod", "chat-predictor-2"): _predictor_pod("chat-predictor-2", gated=True)}
    seen = KIND.observe({KEY: kserve(serving_status()), **pods}, clean(), SHARED_BUILD)
    assert seen.state == "ready" and seen.details["replicas_queued"] == 1
    # A pod Kueue admitted (its gate gone) is the scheduler's again.
    pods = {("v1", "Pod", "chat-predictor-0"): _predictor_pod("chat-predictor-0", gated=False)}
    seen = KIND.observe({KEY: kserve(loading_status()), **pods}, clean(), SHARED_BUILD)
    assert seen.reason != "Queued" and "replicas_queued" not in seen.details


def test_nothing_on_the_cluster_is_absent():
    assert observe().state == "absent"


def test_an_object_kserve_has_not_reconciled_yet_is_progressing():
    assert observe(kserve({})).state == "progressing"


def test_a_model_still_loading_is_progressing():
    seen = observe(kserve(loading_status()))

    assert (seen.state, seen.reason) == ("progressing", "MinimumReplicasUnavailable")
    assert seen.details["transition"] == "InProgress"


def test_a_serving_endpoint_is_ready_with_its_urls_and_replicas():
    seen = observe(kserve(serving_status(), clean(max_replicas=3)), clean(max_replicas=3))

    assert seen.state == "ready"
    assert seen.details["url"] == URL
    assert seen.details["cluster_url"] == CLUSTER_URL
    assert seen.details["replicas_ready"] == 2
    assert seen.details["replicas_max"] == 3
    assert seen.details["model_state"] == "Loaded"
    assert seen.details["runtime"] == "kserve-vllmserver"
    assert seen.conditions[0]["lastTransitionTime"] == "2026-11-30T10:20:03Z"


def test_a_knative_revision_is_reported_as_the_predictor_revision():
    status = serving_status()
    status["components"]["predictor"] |= {
        "latestCreatedRevision": "chat-predictor-00002",
        "latestReadyRevision": "chat-predictor-00002",
        "traffic": [
            {"latestRevision": True, "percent": 100, "revisionName": "chat-predictor-00002"}
        ],
    }

    seen = observe(kserve(status))

    assert seen.details["predictor_revision"] == "chat-predictor-00002"
    assert seen.details["traffic_percent"] == 100


def test_a_model_that_fails_to_load_is_failed_with_kserves_reason():
    status = loading_status()
    status["modelStatus"] = {
        "copies": {"failedCopies": 1, "totalCopies": 0},
        "lastFailureInfo": {
            "reason": "ModelLoadFailed",
            "message": "RuntimeError: Repository Not Found for url:"
            " https://huggingface.co/api/models/meta-llama/Llama-9/revision/main",
            "exitCode": 1,
        },
        "states": {"activeModelState": "", "targetModelState": "FailedToLoad"},
        "transitionStatus": "BlockedByFailedLoad",
    }

    seen = observe(kserve(status))

    assert (seen.state, seen.reason) == ("failed", "ModelLoadFailed")
    assert "Repository Not Found" in seen.message and "(exit code 1)" in seen.message


def test_a_missing_runtime_is_failed():
    status = loading_status()
    status["modelStatus"] = {
        "lastFailureInfo": {
            "reason": "RuntimeNotRecognized",
            "message": "Waiting for runtime to become available",
        },
        "states": {"activeModelState": "", "targetModelState": "FailedToLoad"},
        "transitionStatus": "InvalidSpec",
    }

    seen = observe(kserve(status))

    assert (seen.state, seen.reason) == ("failed", "RuntimeNotRecognized")


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("ProgressDeadlineExceeded", f'ReplicaSet "{RS}" has timed out progressing.'),
        (
            "FailedCreate",
            f'pods "{RS}-x2k9q" is forbidden: exceeded quota: tenant-quota, requested:'
            " requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=16, limited:"
            " requests.nvidia.com/gpu=16",
        ),
        ("RevisionFailed", 'Revision "chat-predictor-00001" failed with message: OOMKilled.'),
    ],
)
def test_a_predictor_the_cluster_gave_up_on_is_failed_with_its_words(reason, message):
    status = loading_status()
    status["conditions"][1:] = [
        cond("PredictorReady", "False", reason, message),
        cond("Ready", "False", reason, message),
    ]

    seen = observe(kserve(status))

    # The cluster's words; the quota's resource names as people read them.
    assert (seen.state, seen.reason) == ("failed", reason)
    assert seen.message == message.replace("requests.nvidia.com/gpu", "GPUs")


def test_an_endpoint_that_served_and_lost_its_replicas_is_degraded():
    status = serving_status()
    status["conditions"] = [
        cond("IngressReady", "True"),
        cond(
            "PredictorReady",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            at="2026-11-30T12:00:00Z",
        ),
        cond("Ready", "False", "MinimumReplicasUnavailable", at="2026-11-30T12:00:00Z"),
    ]
    status["modelStatus"]["copies"]["totalCopies"] = 0

    seen = observe(kserve(status))

    assert (seen.state, seen.reason) == ("degraded", "MinimumReplicasUnavailable")
    assert seen.details["url"] == URL


def test_a_new_revision_that_wont_load_behind_a_serving_one_is_degraded():
    status = serving_status()
    status["modelStatus"] |= {
        "lastFailureInfo": {"reason": "ModelLoadFailed", "message": "CUDA out of memory"},
        "transitionStatus": "BlockedByFailedLoad",
    }

    seen = observe(kserve(status))

    assert (seen.state, seen.reason, seen.message) == (
        "degraded",
        "ModelLoadFailed",
        "CUDA out of memory",
    )


# Connection ------------------------------------------------------------------------------------


def test_connection_gives_both_urls_and_an_openai_curl_against_vllm():
    connection = KIND.connection({KEY: kserve(serving_status())}, clean(), SHARED_BUILD)

    items = dict(connection.items)
    assert items["Endpoint URL"] == URL
    assert items["In-cluster URL"] == CLUSTER_URL
    assert items["Model name"] == "chat"
    assert items["Ready"] == "Yes"
    assert items["OpenAI API base URL"] == f"{CLUSTER_URL}/v1"
    commands = dict(connection.commands)
    assert commands["List the model"] == f"curl -sS {CLUSTER_URL}/v1/models"
    words = shlex.split(commands["Chat completion"])
    assert words[:3] == ["curl", "-sS", f"{CLUSTER_URL}/v1/chat/completions"]
    assert words[words.index("-H") + 1] == "Content-Type: application/json"
    body = json.loads(words[words.index("-d") + 1])
    assert body["model"] == "chat" and body["messages"][0]["role"] == "user"
    assert any("tenant-nova" in note for note in connection.notes)


def test_connection_before_kserve_reports_falls_back_to_the_predictor_service():
    connection = KIND.connection({}, clean(min_replicas=0), SHARED_BUILD)

    items = dict(connection.items)
    assert items["In-cluster URL"] == CLUSTER_URL
    assert "Endpoint URL" not in items
    assert items["Ready"] == "Not yet"
    assert any("does not scale to zero" in note for note in connection.notes)


# Scale -----------------------------------------------------------------------------------------


def test_scale_changes_replicas_and_gpus_per_replica():
    spec = KIND.scale(
        clean(), {"min_replicas": 0, "max_replicas": 4, "gpus_per_replica": 2}, SHARED
    )

    assert (spec["min_replicas"], spec["max_replicas"], spec["gpus_per_replica"]) == (0, 4, 2)
    assert spec["gpu"] == H100 and spec["model_uri"] == LLAMA


def test_scale_resizes_a_hami_share_within_one_gpu():
    spec = clean(gpu=HAMI, gpu_memory_gib=12, gpu_cores=25)

    bigger = KIND.scale(spec, {"gpu_memory_gib": 40, "gpu_cores": 100, "max_replicas": 2},
                        SHARED)
    assert (bigger["gpu_memory_gib"], bigger["gpu_cores"], bigger["max_replicas"]) == (40, 100, 2)
    with pytest.raises(SpecError) as refused:
        KIND.scale(spec, {"gpu_memory_gib": 45}, SHARED)
    assert "At most 44 GiB" in " ".join(refused.value.fields["gpu_memory_gib"])
    with pytest.raises(SpecError) as refused:
        KIND.scale(clean(), {"gpu_cores": 50}, SHARED)
    assert "Only for a HAMi share" in " ".join(refused.value.fields["gpu_cores"])


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"min_replicas": 5, "max_replicas": 4}, "min_replicas", "above max"),
        ({"gpus_per_replica": 9}, "gpus_per_replica", "at most 8"),
        ({"max_replicas": 21}, "max_replicas", "At most 20"),
        ({"model_uri": "hf://a/b"}, "model_uri", "create a new one"),
        ({"gpu": L40S}, "gpu", "create a new one"),
        ({"replicas": 2}, "replicas", "Unknown field"),
    ],
)
def test_scale_revalidates_and_refuses_fixed_fields(changes, field, words):
    with pytest.raises(SpecError) as refused:
        KIND.scale(clean(), changes, SHARED)

    assert words in " ".join(refused.value.fields[field])


# Bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "launch", "field", "words"),
    [
        ({"model_uri": "gs://bucket/model"}, SHARED, "model_uri", "not gs://"),
        ({"model_uri": "https://example.com/model"}, SHARED, "model_uri", "hf://org/model"),
        ({"model_uri": "meta-llama/Llama-3.1-8B"}, SHARED, "model_uri", "hf://org/model"),
        ({"model_uri": "hf://just-a-model"}, SHARED, "model_uri", "hf://organisation/model"),
        ({"model_uri": "hf://org/model/extra"}, SHARED, "model_uri", "hf://organisation/model"),
        ({"model_uri": "s3://UPPER/path"}, SHARED, "model_uri", "s3://bucket/path"),
        ({"model_uri": "s3://b/path with space"}, SHARED, "model_uri", "s3://bucket/path"),
        ({"model_uri": "pvc://claim/../etc"}, SHARED, "model_uri", "pvc://claim-name/path"),
        ({"model_uri": "pvc://"}, SHARED, "model_uri", "pvc://claim-name/path"),
        ({"model_uri": "hf://org/mod\u00e8le"}, SHARED, "model_uri", "hf://organisation/model"),
        ({"model_uri": "hf://org/mo\ndel"}, SHARED, "model_uri", "hf://organisation/model"),
        ({"model_uri": 42}, SHARED, "model_uri", "hf://org/model"),
        ({"model_uri": "hf://" + "a" * 2000}, SHARED, "model_uri", "At most"),
        ({"model_uri": None}, SHARED, "model_uri", "Required"),
        ({"gpu": "gpu:nvidia-b200"}, SHARED, "gpu", "A GPU class"),
        ({"gpu": "cpu"}, SHARED, "gpu", "A GPU class"),
        ({"gpu": 3}, SHARED, "gpu", "A GPU class"),
        ({"gpu": L40S}, SHARED, "gpu", "No quota for NVIDIA L40S GPUs"),
        ({"gpu": "gpu:nvidia-rtx-4000-ada"}, SHARED, "gpu", "Not in your pool"),
        ({"gpu": MIG}, DEDICATED, "gpu", "Dedicated tenants get whole GPUs only"),
        ({"gpu": H100}, DEDICATED, "gpu", "Not in your pool"),
        ({"gpus_per_replica": 9}, SHARED, "gpus_per_replica", "than any node has: at most 8"),
        ({"gpus_per_replica": 0}, SHARED, "gpus_per_replica", "At least 1"),
        ({"gpus_per_replica": -1}, SHARED, "gpus_per_replica", "At least 1"),
        ({"gpus_per_replica": 10**30}, SHARED, "gpus_per_replica", "At most"),
        ({"gpu": MIG, "gpus_per_replica": 2}, SHARED, "gpus_per_replica", "One MIG instance"),
        ({"min_replicas": 3, "max_replicas": 2}, SHARED, "min_replicas", "above max (2)"),
        ({"min_replicas": -1}, SHARED, "min_replicas", "At least 0"),
        ({"max_replicas": 0}, SHARED, "max_replicas", "At least 1"),
        ({"max_replicas": 21}, SHARED, "max_replicas", "At most 20"),
        ({"max_replicas": 2.0}, SHARED, "max_replicas", "A whole number"),
        ({"max_replicas": "3\u00b2"}, SHARED, "max_replicas", "A whole number"),
        ({"cpu": 0}, SHARED, "cpu", "At least 1"),
        ({"cpu": "9" * 5000}, SHARED, "cpu", "At most"),
        ({"memory_gib": "-" + "9" * 40}, SHARED, "memory_gib", "At least 1"),
        ({"memory_gib": {"gib": 4}}, SHARED, "memory_gib", "A whole number"),
        ({"memory_gib": False}, SHARED, "memory_gib", "A whole number"),
        ({"Model_URI": LLAMA}, SHARED, "__all__", "Unknown field"),
        # HAMi shares
        ({"gpu": HAMI, "gpu_memory_gib": 8, "gpu_cores": 20}, DEDICATED, "gpu",
         "Dedicated tenants get whole GPUs only"),
        ({"gpu": HAMI_MEMORY, "gpu_memory_gib": 8, "gpu_cores": 20}, SHARED, "gpu",
         "Name a HAMi share as hami:nvidia-l40s"),
        ({"gpu": HAMI_MEMORY}, DEDICATED, "gpu", "hami:nvidia-l40s"),
        ({"gpu": HAMI_H100, "gpu_memory_gib": 8, "gpu_cores": 20}, SHARED, "gpu",
         "No quota for NVIDIA H100 80GB HBM3 HAMi GPU compute"),
        ({"gpu": "hami:nvidia-h200", "gpu_memory_gib": 8, "gpu_cores": 20}, SHARED, "gpu",
         "Not in your pool: NVIDIA H200 141GB HAMi shares"),
        ({"gpu": "hami:nvidia-b200"}, SHARED, "gpu", "A GPU class"),
        ({"gpu": "hami:nvidia-l40s:cores:x"}, SHARED, "gpu", "A GPU class"),
        ({"gpu": HAMI, "gpu_cores": 20}, SHARED, "gpu_memory_gib", "Required"),
        ({"gpu": HAMI, "gpu_memory_gib": 8}, SHARED, "gpu_cores", "Required"),
        ({"gpu": HAMI, "gpu_memory_gib": 45, "gpu_cores": 20}, SHARED, "gpu_memory_gib",
         "At most 44 GiB: no GPU of your pool"),
        ({"gpu": HAMI, "gpu_memory_gib": 0, "gpu_cores": 20}, SHARED, "gpu_memory_gib",
         "At least 1"),
        ({"gpu": HAMI, "gpu_memory_gib": 8, "gpu_cores": 5}, SHARED, "gpu_cores",
         "At least 10 %: HAMi splits a GPU into at most 10 shares"),
        ({"gpu": HAMI, "gpu_memory_gib": 8, "gpu_cores": 101}, SHARED, "gpu_cores",
         "At most 100 %"),
        ({"gpu": HAMI, "gpu_memory_gib": 8, "gpu_cores": 20, "gpus_per_replica": 2}, SHARED,
         "gpus_per_replica", "One HAMi share per replica"),
        ({"gpu_memory_gib": 8}, SHARED, "gpu_memory_gib", "Only for a HAMi share"),
        ({"gpu": MIG, "gpu_cores": 50}, SHARED, "gpu_cores", "Only for a HAMi share"),
    ],
)
def test_bad_input_is_a_field_error_that_says_why(fields, launch, field, words):
    spec = {"model_uri": LLAMA, "gpu": H200 if launch is DEDICATED else H100, **fields}
    if spec["model_uri"] is None:
        del spec["model_uri"]

    with pytest.raises(SpecError) as refused:
        KIND.validate(spec, launch)

    assert field in refused.value.fields
    if words:
        assert words in " ".join(refused.value.fields[field])


def test_a_missing_gpu_and_uri_are_both_required():
    with pytest.raises(SpecError) as refused:
        KIND.validate({}, SHARED)

    assert refused.value.fields == {"model_uri": ["Required."], "gpu": ["Required."]}


@pytest.mark.parametrize("spec_input", [None, ["hf://a/b"], "hf://a/b", 3.5])
def test_a_spec_that_is_not_an_object_is_refused(spec_input):
    with pytest.raises(SpecError) as refused:
        KIND.validate(spec_input, SHARED)

    assert "__all__" in refused.value.fields


def test_plausible_uris_of_each_scheme_are_accepted():
    for uri in (
        "hf://meta-llama/Llama-3.1-8B-Instruct",
        "HF://mistralai/Mistral-7B-Instruct-v0.3:a1b2c3d",
        "s3://acme-models/llama/3.1/8b",
        "s3://acme.models",
        "pvc://model-store/llama-3.1-8b",
        "pvc://model-store",
    ):
        assert clean(model_uri=uri)["model_uri"].lower() == uri.lower()


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
SMALL = st.integers(1, 4) | st.integers(-1, 24) | st.integers(1, 4).map(str)
SHARE = st.integers(0, 120) | st.integers(10, 44).map(str)
# Mostly plausible values, so some specs pass and their manifests get checked too.
NEAR_VALID = {
    "model_uri": st.sampled_from([LLAMA, "s3://acme/m", "pvc://c/m", "gs://x/y", "hf://a"]),
    "gpu": st.sampled_from([H100, H100, MIG, H200, H200, L40S, HAMI, HAMI, HAMI_MEMORY, "cpu"]),
    **{name: SMALL for name in inference.FIELDS[2:]},
    "gpu_memory_gib": SHARE,
    "gpu_cores": SHARE,
}


def field_values(name):
    return st.one_of(NEAR_VALID[name], NEAR_VALID[name], NEAR_VALID[name], JUNK)


JUNK_SPECS = st.one_of(
    JUNK,
    st.fixed_dictionaries(
        {name: field_values(name) for name in ("model_uri", "gpu")},
        optional={**{name: field_values(name) for name in inference.FIELDS[2:]}, "extra": JUNK},
    ),
    st.fixed_dictionaries(
        {name: NEAR_VALID[name] for name in ("model_uri", "gpu")},
        optional={name: NEAR_VALID[name] for name in inference.FIELDS[2:]},
    ),
)


@given(JUNK_SPECS, st.sampled_from([SHARED, DEDICATED]))
def test_junk_specs_only_ever_raise_spec_errors(spec_input, launch):
    try:
        spec = KIND.validate(spec_input, launch)
    except SpecError:
        return
    ctx = DEDICATED_BUILD if launch is DEDICATED else SHARED_BUILD
    schemas.check_manifests(KIND.manifests(spec, ctx))
    demand = KIND.demand(spec)
    assert demand["count:inference"] == 1
    if launch is DEDICATED:  # whole GPUs only, whatever it asked for
        assert all(key.startswith(("gpu:", "cpu", "memory-gib", "count:")) for key in demand)


@given(st.dictionaries(st.sampled_from(inference.FIELDS) | st.text(max_size=5), JUNK, max_size=4))
def test_junk_changes_only_ever_raise_spec_errors(changes):
    try:
        spec = KIND.scale(clean(), changes, SHARED)
    except SpecError:
        return
    assert spec["min_replicas"] <= spec["max_replicas"]
