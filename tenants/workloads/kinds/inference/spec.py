"""An inference endpoint's spec: its fields, their limits and how a person's spec is read."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..base import LaunchContext
from ..gpu_input import (
    HAMI_FIELDS,
    Gpu,
    read_gpu,
    read_gpu_count,
    read_hami_share,
    share_fields,
)
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
    gpu = read_gpu(fields, ctx)
    gpus = read_gpu_count(fields, gpu, ctx, field_name="gpus_per_replica", per="per replica",
                          default=DEFAULT_GPUS_PER_REPLICA)
    gpu_memory, gpu_cores = read_hami_share(fields, gpu, ctx)
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
    clean |= share_fields(gpu, gpu_memory, gpu_cores)
    if credential:
        clean["credential"] = credential
    return clean
