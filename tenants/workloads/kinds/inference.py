"""Inference endpoint: one model served by vLLM behind KServe, in the tenant's namespace.

One KServe `InferenceService` in Standard mode (a plain Deployment, Service and HPA; the shipped
default would be Knative, so the mode is set on each object), predictor `modelFormat: vLLM` on
the `kserve-vllmserver` ClusterServingRuntime. That runtime runs vLLM's OpenAI-compatible server
on port 8080 (`/v1/chat/completions`, `/v1/completions`, `/v1/models`) and serves the model
under the InferenceService's name (`--served-model-name={{.Name}}`). KServe exposes it in the
cluster as `http://<name>-predictor.<namespace>.svc.<cluster domain>` (port 80) and, when an
ingress domain is configured, outside as `status.url`.

Each replica holds `gpus_per_replica` units of one GPU class (whole GPUs, or a MIG instance for
shared tenants), on its model's nodes; a dedicated tenant's replicas land only on the nodes
reserved for it. The portal reserves quota for `max_replicas`, the most the autoscaler may run.

A shared tenant may instead ask for a HAMi share of a GPU model: `gpu: "hami:<model>"` with
`gpu_memory_gib` (GiB of one GPU's memory) and `gpu_cores` (percent of its compute, at least
HAMI_MIN_CORES) per replica. Each replica is then one vGPU — `nvidia.com/gpu: 1`,
`nvidia.com/gpumem` in MiB, `nvidia.com/gpucores` — scheduled by `hami-scheduler` onto a GPU of
the model HAMi registered (`nvidia.com/use-gputype`, HAMi's own choice of card type: a HAMi node
need not carry GPU Feature Discovery's labels), and the workload holds `hami:<model>:memory-gib`
and `hami:<model>:cores`, each per replica times `max_replicas`. Dedicated tenants get no
partition, neither at validation nor when a stored spec is built for them.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from inventory import resource_classes

from .base import (
    BuildContext,
    Connection,
    LaunchContext,
    Manifest,
    ObjectKey,
    Observation,
    SpecError,
    condition,
)
from .naming import bounded_label
from .spec_input import ALL, SpecFields

INFERENCE_SERVICE = ("serving.kserve.io/v1beta1", "InferenceService")
POD = ("v1", "Pod")
PREDICTOR_LABEL = "serving.kserve.io/inferenceservice"
RUNTIME = "kserve-vllmserver"
MODEL_FORMAT = "vLLM"
DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
DEPLOYMENT_MODE = "Standard"
OPENAI_PATH = "/v1"  # vLLM's own OpenAI server, not KServe's `/openai/v1` of huggingfaceserver

URI_SCHEMES = ("hf", "s3", "pvc")
MAX_URI_LENGTH = 1024
DEFAULT_GPUS_PER_REPLICA = 1
DEFAULT_MIN_REPLICAS = 1
DEFAULT_MAX_REPLICAS = 1
MAX_REPLICAS = 20
DEFAULT_CPU = 4
MAX_CPU = 128
DEFAULT_MEMORY_GIB = 32
MAX_MEMORY_GIB = 1024
MIN_GPU_MEMORY_GIB = 1
# KServe names the predictor Service `<name>-predictor` (a 63-character label) and labels its
# pods `app: isvc.<name>-predictor` (a 63-character label value): 48 characters are left.
MAX_SERVICE_NAME = 48
FIELDS = (
    "model_uri",
    "gpu",
    "gpus_per_replica",
    "min_replicas",
    "max_replicas",
    "cpu",
    "memory_gib",
    "gpu_memory_gib",
    "gpu_cores",
)
HAMI_FIELDS = ("gpu_memory_gib", "gpu_cores")
SCALABLE = frozenset({"gpus_per_replica", "min_replicas", "max_replicas", *HAMI_FIELDS})

# Why a predictor is down when the cluster has given up rather than still working on it:
# Deployment conditions KServe copies in Standard mode, its own reconcile errors, and the
# Knative revision failures of the other mode (in case an admin's defaults ever win).
TERMINAL_REASONS = frozenset(
    {
        "ProgressDeadlineExceeded",
        "FailedCreate",
        "ReconcileFailed",
        "InvalidGPUAllocation",
        "InvalidWorkerSpecNotSet",
        "RevisionFailed",
        "RevisionMissing",
        "ContainerMissing",
        "ContainerError",
        "ImagePullBackOff",
        "ErrImagePull",
        "CrashLoopBackOff",
        "Stopped",
    }
)
# `modelStatus.transitionStatus` values that mean the model will not load as specified.
BLOCKED_TRANSITIONS = frozenset({"BlockedByFailedLoad", "InvalidSpec"})


# Names ------------------------------------------------------------------------------------------


def service_name(workload_name: str) -> str:
    """The InferenceService's name, which is also the model name vLLM serves."""
    return bounded_label(workload_name, MAX_SERVICE_NAME, prefix="llm")


def cluster_url(name: str, namespace: str, cluster_domain: str) -> str:
    """The predictor Service KServe creates in Standard mode (port 80 → vLLM's 8080)."""
    return f"http://{name}-predictor.{namespace}.svc.{cluster_domain}"


# Spec -------------------------------------------------------------------------------------------

_HF_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_PATH = r"[A-Za-z0-9._~=+@-]+(?:/[A-Za-z0-9._~=+@-]+)*/?"
MODEL_URI_FORMS: dict[str, tuple[re.Pattern[str], str]] = {
    "hf": (
        re.compile(rf"hf://{_HF_PART}/{_HF_PART}(?::[A-Za-z0-9._-]{{1,100}})?", re.ASCII),
        "hf://organisation/model, optionally with :revision",
    ),
    "s3": (
        re.compile(rf"s3://[a-z0-9][a-z0-9.-]{{1,61}}[a-z0-9](?:/{_PATH})?", re.ASCII),
        "s3://bucket/path",
    ),
    "pvc": (
        re.compile(rf"pvc://[a-z0-9](?:[-a-z0-9.]{{0,251}}[a-z0-9])?(?:/{_PATH})?", re.ASCII),
        "pvc://claim-name/path",
    ),
}


def _read_model_uri(fields: SpecFields) -> str | None:
    uri = fields.text(
        "model_uri", max_length=MAX_URI_LENGTH, expected="A model URI such as hf://org/model."
    )
    if uri is None:
        return None
    scheme, separator, _ = uri.partition("://")
    scheme = scheme.lower()
    if not separator or scheme not in MODEL_URI_FORMS:
        shown = f" (not {scheme}://)" if separator and scheme.isalnum() and len(scheme) < 12 else ""
        fields.error(
            "model_uri", f"Use hf://org/model, s3://bucket/path or pvc://claim-name/path{shown}."
        )
        return None
    pattern, form = MODEL_URI_FORMS[scheme]
    uri = scheme + uri[len(scheme) :]
    if not pattern.fullmatch(uri) or "/../" in f"{uri}/" or "/./" in f"{uri}/":
        fields.error("model_uri", f"Write it as {form}.")
        return None
    return uri


@dataclass(frozen=True)
class Gpu:
    """The GPU a spec names: a whole-GPU or MIG class, or a HAMi share of a model."""

    key: str  # the spec's `gpu`: gpu:<model> | mig:<model>:<profile> | hami:<model>
    kind: str  # gpu | mig | hami
    model: resource_classes.GpuModel
    resource_class: resource_classes.ResourceClass | None = None  # None for a HAMi share

    @property
    def label(self) -> str:
        if self.resource_class is not None:
            return self.resource_class.label
        return f"{self.model.display_name} HAMi shares"

    @classmethod
    def of(cls, key: str) -> Gpu | None:
        model = resource_classes.parse_hami_gpu(key)
        if model is not None:
            return cls(key=key, kind="hami", model=model)
        try:
            rc = resource_classes.parse(key)
        except resource_classes.UnknownResourceClass:
            return None
        if rc.kind not in {"gpu", "mig", "hami"}:
            return None
        return cls(key=key, kind=rc.kind, model=rc.gpu_model, resource_class=rc)


def _read_gpu(fields: SpecFields, ctx: LaunchContext) -> Gpu | None:
    expected = "A GPU class such as gpu:nvidia-h100-80gb."
    key = fields.text("gpu", max_length=200, expected=expected)
    if key is None:
        return None
    gpu = Gpu.of(key)
    if gpu is None:
        fields.error("gpu", expected)
        return None
    if gpu.kind == "hami" and gpu.resource_class is not None:
        fields.error("gpu", f"Name a HAMi share as {resource_classes.hami_gpu(gpu.model.key)}:"
                     " it holds GPU memory and compute, set with gpu_memory_gib and gpu_cores.")
        return None
    if gpu.kind != "gpu" and not ctx.partitions_allowed:
        fields.error("gpu", "Dedicated tenants get whole GPUs only: MIG partitions and HAMi "
                     "shares are shared inside one trust domain. Choose a gpu:… class.")
        return None
    offered = ", ".join(o.resource for o in ctx.gpu_offers) or "none"
    if gpu.kind == "hami":
        if ctx.hami_offer(gpu.model.key) is None:
            fields.error("gpu", f"Not in your pool: {gpu.label} (your pool offers {offered}).")
            return None
        missing = [
            resource_classes.parse(resource_classes.hami_key(gpu.model.key, counter)).label
            for counter in resource_classes.HAMI_COUNTERS
            if ctx.quota.get(resource_classes.hami_key(gpu.model.key, counter), 0) <= 0
        ]
        if missing:
            fields.error("gpu", f"No quota for {' or '.join(missing)}: request some first.")
            return None
        return gpu
    if ctx.offer(key) is None:
        fields.error("gpu", f"Not in your pool: {gpu.label} (your pool offers {offered}).")
        return None
    if ctx.quota.get(key, 0) <= 0:
        fields.error("gpu", f"No quota for {gpu.label}: request some first.")
        return None
    return gpu


def _read_gpus_per_replica(fields: SpecFields, gpu: Gpu | None, ctx: LaunchContext) -> int | None:
    # Bounded by the offer after reading, so the message can say why.
    count = fields.whole(
        "gpus_per_replica", default=DEFAULT_GPUS_PER_REPLICA, minimum=1, maximum=1_000_000
    )
    if count is None or gpu is None:
        return count
    if gpu.kind == "hami":
        if count > 1:
            fields.error("gpus_per_replica", "One HAMi share per replica: size it with "
                         "gpu_memory_gib and gpu_cores instead.")
            return None
        return count
    offer = ctx.offer(gpu.key)
    if offer is None:
        return count
    most = offer.max_per_node
    if gpu.kind == "mig" and count > 1:
        fields.error("gpus_per_replica", "One MIG instance per replica: CUDA sees only one.")
        return None
    if count > most:
        fields.error(
            "gpus_per_replica", f"More GPUs per replica than any node has: at most {most}."
        )
        return None
    return count


def _read_hami_share(
    fields: SpecFields, gpu: Gpu | None, ctx: LaunchContext
) -> tuple[int | None, int | None]:
    """A HAMi share's GiB of GPU memory and percent of compute per replica; neither for any
    other GPU."""
    if gpu is None:
        return None, None  # the gpu field's own error says what to fix first
    if gpu.kind != "hami":
        for name in HAMI_FIELDS:
            if fields.spec.get(name) not in (None, ""):
                fields.error(name, "Only for a HAMi share (gpu: hami:<model>).")
        return None, None
    memory_offer, cores_offer = ctx.hami_offer(gpu.model.key)
    memory = fields.whole("gpu_memory_gib", default=None, minimum=MIN_GPU_MEMORY_GIB,
                          maximum=1_000_000)
    cores = fields.whole("gpu_cores", default=None, minimum=1, maximum=1_000_000)
    if memory is not None and memory > memory_offer.max_per_node:
        fields.error("gpu_memory_gib", f"At most {memory_offer.max_per_node} GiB: no GPU of "
                     "your pool has more for HAMi to share.")
        memory = None
    if cores is not None and cores < resource_classes.HAMI_MIN_CORES:
        fields.error("gpu_cores", f"At least {resource_classes.HAMI_MIN_CORES} %: HAMi splits a "
                     f"GPU into at most {resource_classes.HAMI_SPLIT_COUNT} shares, so a smaller "
                     "one would strand the rest of it.")
        cores = None
    elif cores is not None and cores > cores_offer.max_per_node:
        fields.error("gpu_cores", f"At most {cores_offer.max_per_node} %: all of one GPU's "
                     "compute (a share lives on one GPU).")
        cores = None
    return memory, cores


def _read_replicas(fields: SpecFields) -> tuple[int | None, int | None]:
    low = fields.whole(
        "min_replicas", default=DEFAULT_MIN_REPLICAS, minimum=0, maximum=MAX_REPLICAS
    )
    high = fields.whole(
        "max_replicas", default=DEFAULT_MAX_REPLICAS, minimum=1, maximum=MAX_REPLICAS
    )
    if low is not None and high is not None and low > high:
        fields.error("min_replicas", f"Min replicas above max ({high}).")
    return low, high


# Status -----------------------------------------------------------------------------------------


def _is(cond: Mapping[str, Any] | None, status: str) -> bool:
    return cond is not None and cond.get("status") == status


def _newest_first(obj: Manifest) -> tuple[dict[str, Any], ...]:
    conds = [dict(c) for c in (obj.get("status") or {}).get("conditions") or []]
    return tuple(sorted(conds, key=lambda c: str(c.get("lastTransitionTime") or ""), reverse=True))


def _model_failure(status: Mapping[str, Any]) -> tuple[str, str] | None:
    """KServe's verdict that the model will not load (storage initializer or vLLM failing)."""
    model = status.get("modelStatus") or {}
    if model.get("transitionStatus") not in BLOCKED_TRANSITIONS:
        return None
    info = model.get("lastFailureInfo") or {}
    message = info.get("message") or ""
    if info.get("exitCode"):
        message = f"{message} (exit code {info['exitCode']})".strip()
    return info.get("reason") or model["transitionStatus"], message


def _terminal(reason: str) -> bool:
    return reason in TERMINAL_REASONS or reason.startswith("ExitCode")


def _down(obj: Manifest) -> tuple[str, str, bool]:
    """Reason, message and whether the cluster gave up, for an InferenceService not Ready."""
    for kind in ("PredictorReady", "Ready", "IngressReady"):
        cond = condition(obj, kind)
        if cond is not None and cond.get("status") != "True":
            reason = cond.get("reason") or "NotReady"
            terminal = cond.get("status") == "False" and _terminal(reason)
            return reason, cond.get("message") or "", terminal
    return "Progressing", "Waiting for KServe to reconcile it.", False


def _unschedulable(objects: Mapping[ObjectKey, Manifest], name: str) -> tuple[int, str]:
    """How many of the predictor's pods the scheduler left Pending, and its words for one."""
    count, words = 0, ""
    for (api_version, kind, _), pod in objects.items():
        if (api_version, kind) != POD:
            continue
        if ((pod.get("metadata") or {}).get("labels") or {}).get(PREDICTOR_LABEL) != name:
            continue
        scheduled = condition(pod, "PodScheduled") or {}
        if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            count += 1
            words = words or str(scheduled.get("message") or "")
    return count, words


def _was_serving(status: Mapping[str, Any]) -> bool:
    """What KServe keeps after readiness is lost: the model loaded once, the predictor had a URL."""
    states = (status.get("modelStatus") or {}).get("states") or {}
    predictor = (status.get("components") or {}).get("predictor") or {}
    return states.get("activeModelState") == "Loaded" or bool(predictor.get("url"))


def _details(obj: Manifest | None, spec: Mapping[str, Any], name: str) -> dict[str, Any]:
    details: dict[str, Any] = {
        "model": name,
        "replicas_min": spec.get("min_replicas"),
        "replicas_max": spec.get("max_replicas"),
    }
    if obj is None:
        return details
    status = obj.get("status") or {}
    model = status.get("modelStatus") or {}
    predictor = (status.get("components") or {}).get("predictor") or {}
    figures = {
        "url": status.get("url"),
        "cluster_url": (status.get("address") or {}).get("url"),
        "replicas_ready": (model.get("copies") or {}).get("totalCopies"),
        "failed_copies": (model.get("copies") or {}).get("failedCopies"),
        "model_state": (model.get("states") or {}).get("activeModelState"),
        "transition": model.get("transitionStatus"),
        "predictor_revision": predictor.get("latestReadyRevision")
        or predictor.get("latestCreatedRevision"),
        "traffic_percent": next(
            (t.get("percent") for t in predictor.get("traffic") or [] if t.get("latestRevision")),
            None,
        ),
        "deployment_mode": status.get("deploymentMode"),
        "runtime": status.get("clusterServingRuntimeName") or status.get("servingRuntimeName"),
    }
    details.update({k: v for k, v in figures.items() if v not in (None, "")})
    return details


def serves(spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """What the endpoint serves, from its spec (shown before KServe reports anything): the
    model's URI, the serving runtime, the GPU and how much of it each replica gets (the
    replicas are among the observed details)."""
    gpu = Gpu.of(str(spec.get("gpu") or ""))
    rows = [
        ("Model URI", str(spec.get("model_uri") or "")),
        ("Runtime", f"vLLM ({RUNTIME})"),
        ("GPU", gpu.label if gpu is not None else str(spec.get("gpu") or "")),
    ]
    if gpu is not None and gpu.kind == "hami":
        rows.append(("GPU per replica", f"one share: {spec.get('gpu_memory_gib')} GiB memory, "
                                        f"{spec.get('gpu_cores')} % compute"))
    else:
        rows.append(("GPUs per replica", str(spec.get("gpus_per_replica") or "")))
    return tuple(rows)


# The kind ---------------------------------------------------------------------------------------


class InferenceKind:
    """The `inference` workload kind (see `base.WorkloadKind`)."""

    KEY: ClassVar[str] = "inference"
    LABEL: ClassVar[str] = "Inference endpoint"
    # KServe copies the InferenceService's labels onto its predictor's pods: they are
    # observed (a replica no node has room for says why, in the scheduler's words).
    OWNED_KINDS: ClassVar[tuple[tuple[str, str], ...]] = (INFERENCE_SERVICE, POD)

    def validate(self, spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
        fields = SpecFields(spec, FIELDS)
        model_uri = _read_model_uri(fields)
        gpu = _read_gpu(fields, ctx)
        gpus = _read_gpus_per_replica(fields, gpu, ctx)
        gpu_memory, gpu_cores = _read_hami_share(fields, gpu, ctx)
        low, high = _read_replicas(fields)
        cpu = fields.whole("cpu", default=DEFAULT_CPU, minimum=1, maximum=MAX_CPU)
        memory = fields.whole(
            "memory_gib", default=DEFAULT_MEMORY_GIB, minimum=1, maximum=MAX_MEMORY_GIB
        )
        fields.raise_errors()
        clean = {
            "model_uri": model_uri,
            "gpu": gpu.key,
            "gpus_per_replica": gpus,
            "min_replicas": low,
            "max_replicas": high,
            "cpu": cpu,
            "memory_gib": memory,
        }
        if gpu.kind == "hami":
            clean |= {"gpu_memory_gib": gpu_memory, "gpu_cores": gpu_cores}
        return clean

    def serves(self, spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        return serves(spec)

    def demand(self, spec: Mapping[str, Any]) -> dict[str, int]:
        replicas = int(spec["max_replicas"])
        model = resource_classes.parse_hami_gpu(spec["gpu"])
        if model is not None:
            gpus = {
                resource_classes.hami_key(model.key, "memory-gib"):
                    int(spec["gpu_memory_gib"]) * replicas,
                resource_classes.hami_key(model.key, "cores"): int(spec["gpu_cores"]) * replicas,
            }
        else:
            gpus = {spec["gpu"]: int(spec["gpus_per_replica"]) * replicas}
        return {
            **gpus,
            "cpu": int(spec["cpu"]) * replicas,
            "memory-gib": int(spec["memory_gib"]) * replicas,
            f"count:{self.KEY}": 1,
        }

    def manifests(self, spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]:
        gpu = Gpu.of(spec["gpu"])
        if gpu.kind != "gpu" and not ctx.partitions_allowed:
            # Launched while the tenant was shared; it is dedicated now: no partition for it.
            raise SpecError({"gpu": [f"{gpu.label} are partitions, and the tenant is dedicated "
                                     "now: whole GPUs only. Delete this endpoint and launch "
                                     "one with a gpu:… class."]})
        gpus = int(spec["gpus_per_replica"])
        amounts = {"cpu": str(spec["cpu"]), "memory": f"{spec['memory_gib']}Gi"}
        if gpu.kind == "hami":
            memory = resource_classes.parse(resource_classes.hami_key(gpu.model.key, "memory-gib"))
            amounts |= {
                resource_classes.GPU_RESOURCE: "1",  # one vGPU
                memory.kubernetes_resource: memory.kubernetes_quantity(int(spec["gpu_memory_gib"])),
                resource_classes.HAMI_CORES_RESOURCE: str(int(spec["gpu_cores"])),
            }
        else:
            amounts[gpu.resource_class.kubernetes_resource] = str(gpus)
        model: dict[str, Any] = {
            "modelFormat": {"name": MODEL_FORMAT},
            "runtime": RUNTIME,
            "storageUri": spec["model_uri"],
            "resources": {"requests": dict(amounts), "limits": dict(amounts)},
        }
        if gpus > 1:
            # vLLM uses one GPU unless told to split the model across the replica's GPUs.
            model["args"] = [f"--tensor-parallel-size={gpus}"]
        predictor: dict[str, Any] = {
            "minReplicas": int(spec["min_replicas"]),
            "maxReplicas": int(spec["max_replicas"]),
            "model": model,
        }
        if gpu.kind == "hami":
            # HAMi places the vGPU: its scheduler, on a GPU of the type its plugin registered.
            predictor["schedulerName"] = resource_classes.HAMI_SCHEDULER
            predictor["annotations"] = {
                resource_classes.HAMI_GPU_TYPE_ANNOTATION: gpu.model.hami_type
            }
            if selector := ctx.gpu_node_selector(None):
                predictor["nodeSelector"] = selector
        else:
            predictor["nodeSelector"] = ctx.gpu_node_selector(gpu.model.product_label)
        if tolerations := ctx.gpu_tolerations():
            predictor["tolerations"] = tolerations
        metadata = ctx.metadata(
            service_name(ctx.name), annotations={DEPLOYMENT_MODE_ANNOTATION: DEPLOYMENT_MODE}
        )
        return [
            {
                "apiVersion": INFERENCE_SERVICE[0],
                "kind": INFERENCE_SERVICE[1],
                "metadata": metadata,
                "spec": {"predictor": predictor},
            }
        ]

    def observe(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Observation:
        name = service_name(ctx.name)
        obj = objects.get((*INFERENCE_SERVICE, name))
        details = _details(obj, spec, name)
        if obj is None:
            return Observation("absent", details=details)
        status = obj.get("status") or {}
        waiting, words = _unschedulable(objects, name)
        if waiting:
            details["replicas_waiting_for_a_node"] = waiting
        found = {"conditions": _newest_first(obj), "details": details}
        failed_model = _model_failure(status)
        if waiting and not failed_model:
            # Replicas beyond the capacity it may use: Pending until room frees up, in the
            # scheduler's words (it retries; nothing is to fix but the size or the fleet).
            return Observation("degraded", "Unschedulable", words, **found)
        if _is(condition(obj, "Ready"), "True"):
            if failed_model:  # the old replicas still serve; the new spec's model won't load
                return Observation("degraded", *failed_model, **found)
            ready = condition(obj, "Ready") or {}
            return Observation("ready", ready.get("reason", ""), ready.get("message", ""), **found)
        reason, message, terminal = _down(obj)
        if failed_model:
            (reason, message), terminal = failed_model, True
        if _was_serving(status):
            return Observation("degraded", reason, message, **found)
        if terminal:
            return Observation("failed", reason, message, **found)
        return Observation("progressing", reason, message, **found)

    def scale(
        self, spec: Mapping[str, Any], changes: Mapping[str, Any], ctx: LaunchContext
    ) -> dict[str, Any]:
        if not isinstance(changes, Mapping):
            raise SpecError({ALL: ["The changes are a JSON object of fields."]})
        fixed = {
            str(key): [
                "Fixed for a running endpoint: create a new one to change it."
                if key in FIELDS
                else "Unknown field."
            ]
            for key in changes
            if key not in SCALABLE
        }
        if fixed:
            raise SpecError(fixed)
        return self.validate({**spec, **changes}, ctx)

    def connection(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Connection:
        name = service_name(ctx.name)
        obj = objects.get((*INFERENCE_SERVICE, name)) or {}
        status = obj.get("status") or {}
        inside = (status.get("address") or {}).get("url") or cluster_url(
            name, ctx.namespace, ctx.cluster_domain
        )
        outside = status.get("url") or ""
        ready = "Yes" if _is(condition(obj, "Ready"), "True") else "Not yet"
        body = json.dumps(
            {
                "model": name,
                "messages": [{"role": "user", "content": "Say hello in one sentence."}],
                "max_tokens": 64,
            }
        )
        base = inside.rstrip("/") + OPENAI_PATH
        items = [("Model name", name), ("In-cluster URL", inside), ("Ready", ready)]
        if outside:
            items.insert(1, ("Endpoint URL", outside))
        items.append(("OpenAI API base URL", base))
        notes = [
            f"From pods in the tenant's namespace ({ctx.namespace}) use the in-cluster URL: the"
            " namespace's network policy admits traffic from the tenant's own pods and from the"
            " ingress gateway, which serves the endpoint URL.",
            "Any OpenAI client works: set its base URL to the one above and the model to"
            f" “{name}”. The endpoint has no API key of its own.",
        ]
        if spec.get("min_replicas") == 0:
            notes.append(
                "Minimum replicas is 0, but KServe's Standard mode autoscaler keeps one replica"
                " running: the endpoint does not scale to zero."
            )
        return Connection(
            items=tuple(items),
            commands=(
                ("List the model", f"curl -sS {shlex.quote(base + '/models')}"),
                (
                    "Chat completion",
                    f"curl -sS {shlex.quote(base + '/chat/completions')}"
                    f" -H 'Content-Type: application/json' -d {shlex.quote(body)}",
                ),
            ),
            notes=tuple(notes),
        )


KIND = InferenceKind()
