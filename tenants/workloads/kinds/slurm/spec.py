"""What a Slurm cluster's spec may say (workers, their GPUs, CPUs and memory, accounting, the
REST API, root's SSH key), how it scales, and what it holds of each resource class."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base import LaunchContext, SpecError, whole
from ..spec_checks import (
    FieldErrors,
    as_mapping,
    boolean,
    count_per_node,
    gpu_offer,
    refuse_unknown,
)
from ..ssh_keys import public_key
from .manifests import (
    ACCOUNTING_CONTAINERS,
    CONTROLLER_CONTAINERS,
    CONTROLLER_STATE_GIB,
    DATABASE_GIB,
    LOGIN_CONTAINERS,
    RESTAPI_CONTAINERS,
    WORKER_SIDECARS,
)

MAX_WORKERS = 256
MAX_CPU_PER_WORKER = 256
MAX_MEMORY_GIB_PER_WORKER = 4096

FIELDS = frozenset(
    {
        "workers",
        "gpu",
        "gpus_per_worker",
        "cpu_per_worker",
        "memory_gib_per_worker",
        "accounting",
        "rest_api",
        "ssh_public_key",
    }
)


def validate(spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
    """The clean spec, or SpecError with every field's errors."""
    spec = as_mapping(spec)
    errors = FieldErrors()
    refuse_unknown(spec, FIELDS, errors)
    workers = _workers(spec.get("workers"), errors)
    gpu, per_worker = "", None
    checked = errors.check(
        gpu_offer,
        spec.get("gpu"),
        ctx,
        allow=frozenset({"gpu", "mig"}),
        refused={
            "hami": "Slurm workers get whole GPUs or MIG partitions: Slurm's GPU "
            "scheduling does not know HAMi shares."
        },
    )
    if checked is not None:
        resource_class, offer = checked
        gpu = resource_class.key
        per_worker = errors.check(
            count_per_node, spec.get("gpus_per_worker"), offer, field_name="gpus_per_worker"
        )
    cpu = _size(spec, "cpu_per_worker", MAX_CPU_PER_WORKER, errors)
    memory = _size(spec, "memory_gib_per_worker", MAX_MEMORY_GIB_PER_WORKER, errors)
    accounting = errors.check(
        boolean, spec.get("accounting"), field_name="accounting", default=False
    )
    rest_api = errors.check(boolean, spec.get("rest_api"), field_name="rest_api", default=False)
    key = ""
    if spec.get("ssh_public_key") not in (None, ""):
        key = errors.check(public_key, spec["ssh_public_key"], field_name="ssh_public_key")
    errors.raise_if_any()
    return {
        "workers": workers,
        "gpu": gpu,
        "gpus_per_worker": per_worker,
        "cpu_per_worker": cpu,
        "memory_gib_per_worker": memory,
        "accounting": accounting,
        "rest_api": rest_api,
        "ssh_public_key": key,
    }


def _workers(value: Any, errors: FieldErrors) -> int | None:
    if value is None:
        errors.add("workers", "Required.")
        return None
    try:
        return whole(value, field_name="workers", minimum=0, maximum=MAX_WORKERS)
    except SpecError as exc:
        (message,) = exc.fields["workers"]
        if message.startswith("At least"):
            message = "A worker count below zero: at least 0 workers."
        elif message.startswith("At most"):
            message = f"At most {MAX_WORKERS} workers."
        errors.add("workers", message)
        return None


def _size(
    spec: Mapping[str, Any], field_name: str, maximum: int, errors: FieldErrors
) -> int | None:
    if spec.get(field_name) is None:
        errors.add(field_name, "Required.")
        return None
    return errors.check(whole, spec[field_name], field_name=field_name, minimum=1, maximum=maximum)


def demand(spec: Mapping[str, Any]) -> dict[str, int]:
    """The workers' GPUs, vCPUs and memory, plus the fixed control plane (controller,
    login node, and REST API and accounting when enabled), and their volumes."""
    workers = int(spec["workers"])
    millicores, mib = _overhead(spec)
    held = {
        "cpu": workers * int(spec["cpu_per_worker"]) + _ceil_div(millicores, 1000),
        "memory-gib": workers * int(spec["memory_gib_per_worker"]) + _ceil_div(mib, 1024),
        "storage-gib": CONTROLLER_STATE_GIB + (DATABASE_GIB if spec.get("accounting") else 0),
        "count:slurm": 1,
    }
    if workers and spec.get("gpu"):
        held[spec["gpu"]] = workers * int(spec["gpus_per_worker"])
    return held


def _overhead(spec: Mapping[str, Any]) -> tuple[int, int]:
    containers = [*CONTROLLER_CONTAINERS.values(), *LOGIN_CONTAINERS.values()]
    containers += list(WORKER_SIDECARS.values()) * int(spec["workers"])
    if spec.get("rest_api"):
        containers += RESTAPI_CONTAINERS.values()
    if spec.get("accounting"):
        containers += ACCOUNTING_CONTAINERS.values()
    return sum(c for c, _ in containers), sum(m for _, m in containers)


def scale(
    spec: Mapping[str, Any], changes: Mapping[str, Any], ctx: LaunchContext
) -> dict[str, Any]:
    """More or fewer workers (0..256); the machinery checks the quota of the new demand."""
    changes = as_mapping(changes)
    errors = FieldErrors()
    for name in sorted(set(changes) - {"workers"}):
        errors.add(
            name[:100],
            "Cannot be changed on an existing Slurm cluster."
            if name in FIELDS
            else "Unknown field.",
        )
    workers = _workers(changes.get("workers"), errors)
    errors.raise_if_any()
    return {**spec, "workers": workers}


def _ceil_div(amount: int, unit: int) -> int:
    return -(-amount // unit)
