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
`nvidia.com/gpumem` in MiB, `nvidia.com/gpucores` — admitted by Kueue through the tenant's
`shares` LocalQueue (into the model's `hami-<model>` flavor, which the predictor's node selector
on the model's product label picks) and scheduled by `hami-scheduler` onto a GPU of the model
HAMi registered (`nvidia.com/use-gputype`). So a HAMi node must carry GPU Feature Discovery's
product label (the GPU operator's GFD puts it there) as well as HAMi's `gpu: "on"`. The workload
holds `hami:<model>:memory-gib` and `hami:<model>:cores`, each per replica times
`max_replicas`. Dedicated tenants get no partition, neither at validation nor when a stored spec
is built for them.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any, ClassVar

from ..base import (
    BuildContext,
    Connection,
    LaunchContext,
    Manifest,
    ObjectKey,
    Observation,
    SpecError,
    condition,
)
from ..gpu_input import HAMI_FIELDS, MIN_GPU_MEMORY_GIB, Gpu
from ..spec_input import ALL
from . import exposure
from .credential import with_credential
from .spec import (
    DEFAULT_CPU,
    DEFAULT_GPUS_PER_REPLICA,
    DEFAULT_MAX_REPLICAS,
    DEFAULT_MEMORY_GIB,
    DEFAULT_MIN_REPLICAS,
    DEPLOYMENT_MODE,
    DEPLOYMENT_MODE_ANNOTATION,
    FIELDS,
    INFERENCE_SERVICE,
    MAX_CPU,
    MAX_MEMORY_GIB,
    MAX_REPLICAS,
    MAX_URI_LENGTH,
    MODEL_FORMAT,
    OPENAI_PATH,
    POD,
    RUNTIME,
    SCALABLE,
    cluster_url,
    serves,
    service_name,
    validate,
)
from .status import observe

__all__ = [
    "DEFAULT_CPU",
    "DEFAULT_GPUS_PER_REPLICA",
    "DEFAULT_MAX_REPLICAS",
    "DEFAULT_MEMORY_GIB",
    "DEFAULT_MIN_REPLICAS",
    "FIELDS",
    "HAMI_FIELDS",
    "KIND",
    "MAX_CPU",
    "MAX_MEMORY_GIB",
    "MAX_REPLICAS",
    "MAX_URI_LENGTH",
    "MIN_GPU_MEMORY_GIB",
    "InferenceKind",
    "cluster_url",
    "serves",
    "service_name",
]


class InferenceKind:
    """The `inference` workload kind (see `base.WorkloadKind`)."""

    KEY: ClassVar[str] = "inference"
    LABEL: ClassVar[str] = "Inference endpoint"
    # KServe copies the InferenceService's labels onto its predictor's pods: they are
    # observed (a replica no node has room for says why, in the scheduler's words).
    # Its API keys' Secrets too (the route and policy go with the objects it applied).
    OWNED_KINDS: ClassVar[tuple[tuple[str, str], ...]] = (
        INFERENCE_SERVICE, POD, exposure.SECRET)

    def validate(self, spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
        return validate(spec, ctx)

    def serves(self, spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        return serves(spec)

    def demand(self, spec: Mapping[str, Any]) -> dict[str, int]:
        replicas = int(spec["max_replicas"])
        per_replica = Gpu.of(spec["gpu"]).demand(
            int(spec["gpus_per_replica"]), spec.get("gpu_memory_gib"), spec.get("gpu_cores"))
        return {
            **{resource: amount * replicas for resource, amount in per_replica.items()},
            "cpu": int(spec["cpu"]) * replicas,
            "memory-gib": int(spec["memory_gib"]) * replicas,
            f"count:{self.KEY}": 1,
        }

    def manifests(self, spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]:
        gpu = Gpu.of(spec["gpu"])
        # Launched while the tenant was shared; it is dedicated now: no partition for it.
        gpu.refuse_if_dedicated(ctx, "endpoint")
        gpus = int(spec["gpus_per_replica"])
        amounts = {"cpu": str(spec["cpu"]), "memory": f"{spec['memory_gib']}Gi"}
        amounts |= gpu.resources(gpus, spec.get("gpu_memory_gib"), spec.get("gpu_cores"))
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
        # HAMi places a share: its scheduler, on a GPU of the type its plugin registered. The
        # model's product label: where the scheduler may put it, and for a HAMi share the
        # flavor (hami-<model>) Kueue admits it into.
        predictor |= gpu.placement(ctx)
        if annotations := gpu.pod_annotations:
            predictor["annotations"] = annotations
        with_credential(predictor, spec)
        # KServe copies the InferenceService's labels to its predictor's Deployment and pods:
        # Kueue admits each replica through the tenant's queue; a HAMi share through its
        # `shares` queue, metered in vGPUs, memory and compute (see the enforcement's kueue).
        metadata = ctx.metadata(
            service_name(ctx.name), annotations={DEPLOYMENT_MODE_ANNOTATION: DEPLOYMENT_MODE},
            labels=gpu.admission_labels(ctx),
        )
        return [
            {
                "apiVersion": INFERENCE_SERVICE[0],
                "kind": INFERENCE_SERVICE[1],
                "metadata": metadata,
                "spec": {"predictor": predictor},
            },
            *exposure.manifests(ctx),
        ]

    def observe(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Observation:
        observation = observe(objects, spec, ctx)
        observation.details.update(exposure.observed_details(objects, ctx))
        return observation

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
        ready = "Yes" if (condition(obj, "Ready") or {}).get("status") == "True" else "Not yet"
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
        return exposure.connection(Connection(
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
        ), ctx, name)


    def gpu_pods(self, spec: Mapping[str, Any], ctx: BuildContext) -> str:
        # KServe's Standard mode: the predictor's Deployment `<name>-predictor` makes the pods
        # `<name>-predictor-<template hash>-<suffix>`.
        return re.escape(f"{service_name(ctx.name)}-predictor-") + r"[a-z0-9]+-[a-z0-9]+"


KIND = InferenceKind()
