"""An inference endpoint's spec: its fields, their limits and how a person's spec is read."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inventory import resource_classes

from ..base import LaunchContext
from ..naming import bounded_label
from ..spec_input import SpecFields
from .credential import read_credential

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
    "credential",
)
HAMI_FIELDS = ("gpu_memory_gib", "gpu_cores")
# A new credential (or none) redeploys the predictor: allowed on a running endpoint.
SCALABLE = frozenset(
    {"gpus_per_replica", "min_replicas", "max_replicas", *HAMI_FIELDS, "credential"}
)


def service_name(workload_name: str) -> str:
    """The InferenceService's name, which is also the model name vLLM serves."""
    return bounded_label(workload_name, MAX_SERVICE_NAME, prefix="llm")


def cluster_url(name: str, namespace: str, cluster_domain: str) -> str:
    """The predictor Service KServe creates in Standard mode (port 80 → vLLM's 8080)."""
    return f"http://{name}-predictor.{namespace}.svc.{cluster_domain}"




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
    if spec.get("credential"):
        rows.insert(1, ("Model credential", str(spec["credential"])))
    return tuple(rows)


def validate(spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
    """The spec a person gave, clean, or SpecError naming each field to fix."""
    fields = SpecFields(spec, FIELDS)
    model_uri = _read_model_uri(fields)
    credential = read_credential(fields, model_uri, ctx)
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
    if credential:
        clean["credential"] = credential
    return clean
