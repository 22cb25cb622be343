"""KServe 0.20 for the simulated fleet: an InferenceService in Standard mode on the vLLM
runtime downloads its model (Pending), loads it (Loading), then serves (Ready, Loaded), with its
URLs as KServe writes them. Pure.

Its predictor runs a pod per replica (`minReplicas`, at least one: Standard mode's autoscaler
keeps one), named after the predictor's pod template as a ReplicaSet's pods are, carrying the
InferenceService's labels (KServe copies them onto its Deployment's pods) and asking for the
model's resources on the predictor's nodes. A pod no node has room for stays Pending with the
scheduler's words: until every replica is placed the predictor does not become ready (KServe's
"Deployment does not have minimum availability"), and the model's copies count only the
placed ones. A replica placed late (annotated so by the gateway) is waited for until its pod
runs.

The access rule: some models need a credential, as on the real Hub and in real buckets. The
Hugging Face repositories in `GATED_MODELS` are gated, and a bucket named `private-…` is private:
the storage initializer loads them only with what KServe hands it from the Secrets the
predictor's ServiceAccount lists (`HF_TOKEN`; `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`),
and otherwise fails as the missing model does, in huggingface_hub's or botocore's words.

The failure rule: an InferenceService whose `storageUri` names a model ending in
`-does-not-exist` (`hf://org/llama-does-not-exist`, `s3://bucket/path/x-does-not-exist`) is
one the storage initializer cannot find: once its controller has had its time it fails, as
KServe reports it (`modelStatus.transitionStatus: BlockedByFailedLoad`, `lastFailureInfo`
reason `ModelLoadFailed` with the initializer's message).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .simulated_clock import Clock, Status, digest, generation
from .simulated_operators import (
    PLACED_LATE,
    Made,
    Plan,
    by_kind,
    name_and_namespace,
    owner_reference,
)

Manifest = dict[str, Any]
MISSING_MODEL_SUFFIX = "-does-not-exist"
# KServe's default domain template `{{ .Name }}-{{ .Namespace }}.{{ .IngressDomain }}`.
INGRESS_DOMAIN = "inference.example.com"


def _knative_condition(kind: str, ok: bool, since: str, reason: str = "", message: str = ""):
    """KServe's (knative) conditions: no observedGeneration, reason and message only when
    something is wrong."""
    found: Status = {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": since}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


def _storage_uri(obj: Manifest) -> str:
    predictor = (obj.get("spec") or {}).get("predictor") or {}
    model = predictor.get("model") or {}
    return str(model.get("storageUri") or predictor.get("storageUri") or "")


def missing_model(storage_uri: str) -> bool:
    """The failure rule: the model's name (its last path segment, without a `:revision`)
    ends in `-does-not-exist`."""
    path = storage_uri.partition("://")[2].rstrip("/")
    last = path.rsplit("/", 1)[-1].split(":", 1)[0]
    return last.endswith(MISSING_MODEL_SUFFIX)


def _model_not_found(storage_uri: str) -> str:
    """What KServe's storage initializer prints when the model is not there."""
    scheme, _, path = storage_uri.partition("://")
    if scheme == "hf":
        repo, _, revision = path.partition(":")
        return (
            "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not "
            f"Found for url: https://huggingface.co/api/models/{repo}/revision/"
            f"{revision or 'main'}. Please make sure you specified the correct `repo_id` and "
            "`repo_type`. If you are trying to access a private or gated repo, make sure you "
            "are authenticated."
        )
    return f"RuntimeError: Failed to fetch model. No model found in {storage_uri}."


# Gated on huggingface.co: only an account that accepted the terms, with its token, downloads them.
# (Not every gated repository: the demo's other Llama endpoints load without a token.)
GATED_MODELS = frozenset({
    "meta-llama/Llama-3.2-3B-Instruct",
    "google/gemma-2-9b-it",
    "mistralai/Mistral-7B-Instruct-v0.3",
})
PRIVATE_BUCKET_PREFIX = "private-"
HF_KEYS = frozenset({"HF_TOKEN"})
S3_KEYS = frozenset({"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"})


def access_refused(storage_uri: str, credentials: frozenset[str]) -> str:
    """What the storage initializer prints when the model needs a credential it was not given
    (`credentials`: the keys of the Secrets it got); empty when it may download."""
    scheme, _, path = storage_uri.partition("://")
    if scheme == "hf":
        repo, _, revision = path.partition(":")
        if repo in GATED_MODELS and not credentials >= HF_KEYS:
            return (
                "huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated "
                f"repo for url https://huggingface.co/api/models/{repo}/revision/"
                f"{revision or 'main'}. Access to model {repo} is restricted. You must have "
                "access to it and be authenticated to access it. Please log in."
            )
    if scheme == "s3":
        bucket = path.partition("/")[0]
        if bucket.startswith(PRIVATE_BUCKET_PREFIX) and not credentials >= S3_KEYS:
            return "botocore.exceptions.NoCredentialsError: Unable to locate credentials"
    return ""


PREDICTOR_LABEL = "serving.kserve.io/inferenceservice"
COMPONENT_LABEL = "component"


def _replicas(predictor: Manifest) -> int:
    try:
        return max(1, int(predictor.get("minReplicas") or 1))
    except (TypeError, ValueError):
        return 1


def plan_inference_service(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Plan:
    """The predictor's pods: one per replica of its current pod template (a changed template
    replaces them; a scale-down removes the extra ones)."""
    name, namespace = name_and_namespace(obj)
    predictor = (obj.get("spec") or {}).get("predictor") or {}
    model = predictor.get("model") or {}
    pod_spec: Manifest = {
        "containers": [{
            "name": "kserve-container",
            "image": "kserve/vllmserver:latest",
            "args": list(model.get("args") or []),
            "resources": model.get("resources") or {},
        }],
    }
    for key in ("nodeSelector", "tolerations", "schedulerName"):
        if predictor.get(key):
            pod_spec[key] = predictor[key]
    template_hash = digest(pod_spec)[:10]
    pods = by_kind(children, "Pod")
    labels = dict((obj.get("metadata") or {}).get("labels") or {})
    labels |= {PREDICTOR_LABEL: name, COMPONENT_LABEL: "predictor"}
    made = []
    for replica in range(_replicas(predictor)):
        pod_name = f"{name}-predictor-{template_hash}-{digest(name, replica)[:5]}"
        if pod_name in pods:
            made.append(Made(pods[pod_name], clock.now))
            continue
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": namespace, "labels": labels,
                         "ownerReferences": [owner_reference(obj)]},
            "spec": pod_spec,
        }
        made.append(Made(pod, clock.changed_at))
    return Plan(tuple(made), frozenset({("v1", "Pod")}))


def _waiting_pods(children: Sequence[Manifest]) -> tuple[int, list[Manifest], bool]:
    """(pods placed, pods the scheduler left Pending, whether a pod placed late, once room
    freed up, is still starting) among the predictor's."""
    pods = [c for c in children if c.get("kind") == "Pod"]
    waiting = [p for p in pods if not (p.get("spec") or {}).get("nodeName")]
    starting = any(
        PLACED_LATE in ((p.get("metadata") or {}).get("annotations") or {})
        and (p.get("status") or {}).get("phase") != "Running"
        for p in pods if p not in waiting
    )
    return len(pods) - len(waiting), waiting, starting


def inference_service(
    obj: Manifest, clock: Clock, children: Sequence[Manifest],
    credentials: frozenset[str] = frozenset(),
) -> Status:
    """KServe 0.20 in Standard mode with the vLLM runtime: the storage initializer downloads
    the model (Pending), vLLM loads it (Loading), then the predictor serves (Loaded, Ready)
    once every replica's pod is placed. `credentials`: the keys of the Secrets its
    ServiceAccount lists (the access rule)."""
    name, namespace = name_and_namespace(obj)
    gen = generation(obj)
    predictor = (obj.get("spec") or {}).get("predictor") or {}
    model = predictor.get("model") or {}
    since = clock.since
    replicas = _replicas(predictor)
    placed, waiting, starting = _waiting_pods(children)
    status: Status = {
        "observedGeneration": gen,
        "deploymentMode": "Standard",
        "clusterServingRuntimeName": model.get("runtime") or "kserve-vllmserver",
    }
    storage_uri = _storage_uri(obj)
    # A rollout after a change keeps the replicas that served; a model that is not there
    # never served, and fails again.
    # A replica placed late serves once its pod runs (the others served meanwhile, if any).
    done = clock.served_before_change or (clock.ready and not starting)
    refused = access_refused(storage_uri, credentials)
    failed = done and (missing_model(storage_uri) or bool(refused))
    if done and not failed and not waiting:
        host = f"{name}-{namespace}.{INGRESS_DOMAIN}"
        rolling = not clock.ready
        return status | {
            "url": f"http://{host}",
            "address": {"url": f"http://{name}-predictor.{namespace}.svc.{clock.cluster_domain}"},
            "components": {
                "predictor": {"url": f"http://{name}-predictor-{namespace}.{INGRESS_DOMAIN}"}
            },
            "conditions": [
                _knative_condition("IngressReady", True, since),
                _knative_condition("PredictorReady", True, since),
                _knative_condition("Ready", True, since),
            ],
            "modelStatus": {
                "copies": {"failedCopies": 0, "totalCopies": replicas},
                "states": {
                    "activeModelState": "Loaded",
                    "targetModelState": "Loading" if rolling else "Loaded",
                },
                "transitionStatus": "InProgress" if rolling else "UpToDate",
            },
        }
    unavailable = "Deployment does not have minimum availability."
    status |= {
        "components": {"predictor": {}},
        "conditions": [
            _knative_condition("IngressReady", False, since, "Predictor ingress not created"),
            _knative_condition(
                "PredictorReady", False, since, "MinimumReplicasUnavailable", unavailable
            ),
            _knative_condition("Ready", False, since, "MinimumReplicasUnavailable", unavailable),
        ],
    }
    if failed:  # the storage initializer finds no model, and keeps failing
        status["modelStatus"] = {
            "copies": {"failedCopies": 1, "totalCopies": 0},
            "lastFailureInfo": {
                "location": f"{name}-predictor-{digest(name, namespace)[:10]}-"
                f"{digest(namespace, name)[:5]}",
                "reason": "ModelLoadFailed",
                "message": refused or _model_not_found(storage_uri),
                "exitCode": 1,
                "time": since,
            },
            "states": {"activeModelState": "", "targetModelState": "FailedToLoad"},
            "transitionStatus": "BlockedByFailedLoad",
        }
        return status
    if waiting:  # replicas no node has room for: the predictor waits for the scheduler
        status["modelStatus"] = {
            "copies": {"failedCopies": 0, "totalCopies": placed if done else 0},
            "states": {
                "activeModelState": "Loaded" if done and placed else "",
                "targetModelState": "Pending",
            },
            "transitionStatus": "InProgress",
        }
        return status
    downloading = clock.progress < 0.5
    status["modelStatus"] = {
        "copies": {"failedCopies": 0, "totalCopies": 0},
        "states": {
            "activeModelState": "",
            "targetModelState": "Pending" if downloading else "Loading",
        },
        "transitionStatus": "InProgress",
    }
    return status
