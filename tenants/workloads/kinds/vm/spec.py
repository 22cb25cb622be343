"""What a VM's spec may say: validation against the boot-image catalog, the GPU offers and the
quota; resizing; power actions; and what the VM holds of each resource class."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..base import LaunchContext, SpecError, whole
from ..image_references import oci_reference
from ..spec_checks import (
    FieldErrors,
    as_mapping,
    boolean,
    count_per_node,
    gpu_offer,
    refuse_unknown,
)
from ..ssh_keys import public_key
from .passthrough import PASSTHROUGH_DEVICES

MAX_CPU = 128
MAX_MEMORY_GIB = 2048
MAX_DISK_GIB = 16384
USERNAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")

FIELDS = frozenset(
    {
        "image",
        "custom_image",
        "default_user",
        "cpu",
        "memory_gib",
        "disk_gib",
        "gpu",
        "gpus",
        "ssh_public_key",
        "running",
        "restarted_at",
        # Resolved by validate: accepted back (and recomputed) so a clean spec validates again.
        "container_disk",
        "image_label",
    }
)
SCALABLE = frozenset({"cpu", "memory_gib", "disk_gib", "gpus"})
POWER_ACTIONS = ("start", "stop", "restart")


@dataclass(frozen=True)
class _BootImage:
    key: str  # catalog key, "" for a custom image
    label: str
    reference: str
    default_user: str
    min_disk_gib: int


def _username(value: Any, *, field_name: str) -> str:
    if not isinstance(value, str) or not USERNAME.match(value.strip()):
        raise SpecError(
            {field_name: ["A Linux user name (lower case, e.g. ubuntu, fedora, cloud-user)."]}
        )
    return value.strip()


def _boot_image(spec: Mapping[str, Any], ctx: LaunchContext) -> _BootImage:
    key, custom = spec.get("image"), spec.get("custom_image")
    if key not in (None, "") and custom not in (None, ""):
        raise SpecError({"custom_image": ["Pick a listed image or give your own, not both."]})
    if custom not in (None, ""):
        reference = oci_reference(custom, field_name="custom_image")
        user = _username(spec.get("default_user"), field_name="default_user")
        return _BootImage("", reference, reference, user, 1)
    catalog = ctx.catalog.get("vm_images")
    catalog = catalog if isinstance(catalog, Mapping) else {}
    if not isinstance(key, str) or not key:
        raise SpecError({"image": ["Pick an image, or give a container-disk image of your own."]})
    if key not in catalog:
        offered = ", ".join(sorted(str(k) for k in catalog)) or "none"
        raise SpecError({"image": [f"Not one of the images offered ({offered})."]})
    entry = catalog[key]
    try:
        # Admin data, but a typo there must read as such, not as a crash.
        if not isinstance(entry, Mapping):
            raise SpecError({"image": ["not a mapping"]})
        reference = oci_reference(entry.get("container_disk"), field_name="image")
        user = _username(entry.get("default_user"), field_name="image")
        min_disk = whole(entry.get("min_disk_gib", 1), field_name="image", minimum=1)
    except SpecError:
        raise SpecError(
            {"image": ["This image is misconfigured in the portal: tell the platform team."]}
        ) from None
    label = entry.get("label") if isinstance(entry.get("label"), str) else key
    return _BootImage(key, label, reference, user, min_disk)


def _restarted_at(value: Any) -> str:
    if value in (None, ""):
        return ""
    try:
        if not isinstance(value, str) or len(value) > 40:
            raise ValueError
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise SpecError({"restarted_at": ["An ISO 8601 timestamp."]}) from None
    return value


def _size(
    spec: Mapping[str, Any], field_name: str, maximum: int, errors: FieldErrors, minimum: int = 1
) -> int | None:
    if spec.get(field_name) is None:
        errors.add(field_name, "Required.")
        return None
    return errors.check(
        whole, spec[field_name], field_name=field_name, minimum=minimum, maximum=maximum
    )


def _iso_now(now: dt.datetime | None) -> str:
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def validate(spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
    """The clean spec, with what the catalog resolves, or SpecError with every field's errors."""
    spec = as_mapping(spec)
    errors = FieldErrors()
    refuse_unknown(spec, FIELDS, errors)
    image = errors.check(_boot_image, spec, ctx)
    cpu = _size(spec, "cpu", MAX_CPU, errors)
    memory = _size(spec, "memory_gib", MAX_MEMORY_GIB, errors)
    disk = _size(spec, "disk_gib", MAX_DISK_GIB, errors)
    if image is not None and disk is not None and disk < image.min_disk_gib:
        errors.add(
            "disk_gib",
            f"A disk smaller than the image: {image.label} needs at least "
            f"{image.min_disk_gib} GiB.",
        )
    gpu, gpus = _gpus(spec, ctx, errors)
    key = errors.check(public_key, spec.get("ssh_public_key"), field_name="ssh_public_key")
    running = errors.check(boolean, spec.get("running"), field_name="running", default=True)
    restarted_at = errors.check(_restarted_at, spec.get("restarted_at"))
    errors.raise_if_any()
    return {
        "image": image.key,
        "custom_image": "" if image.key else image.reference,
        "container_disk": image.reference,
        "image_label": image.label,
        "default_user": image.default_user,
        "cpu": cpu,
        "memory_gib": memory,
        "disk_gib": disk,
        "gpu": gpu,
        "gpus": gpus,
        "ssh_public_key": key,
        "running": running,
        "restarted_at": restarted_at,
    }


def _gpus(spec: Mapping[str, Any], ctx: LaunchContext, errors: FieldErrors) -> tuple[str, int]:
    if spec.get("gpu") in (None, ""):
        if spec.get("gpus") not in (None, "", 0, "0"):
            errors.add("gpus", "Pick a GPU model first.")
        return "", 0
    checked = errors.check(
        gpu_offer,
        spec["gpu"],
        ctx,
        allow=frozenset({"gpu"}),
        refused={
            "mig": "A VM gets whole GPUs by PCI passthrough: MIG partitions are for containers.",
            "hami": "A VM gets whole GPUs by PCI passthrough: HAMi shares are for containers.",
        },
    )
    if checked is None:
        return "", 0
    resource_class, offer = checked
    if resource_class.gpu_model.key not in PASSTHROUGH_DEVICES:
        errors.add("gpu", f"{resource_class.label} cannot be passed through to a VM here.")
        return "", 0
    gpus = errors.check(count_per_node, spec.get("gpus"), offer, field_name="gpus", minimum=0)
    # 0 GPUs of a model is a VM without GPUs: nothing of the model is held or passed through.
    return (resource_class.key, gpus) if gpus else ("", 0)


def demand(spec: Mapping[str, Any]) -> dict[str, int]:
    """Running: its GPUs, vCPUs, memory and disk. Stopped: only its disk, which it keeps;
    the GPUs, vCPUs and memory go back to the tenant's free quota."""
    held = {"storage-gib": int(spec["disk_gib"]), "count:vm": 1}
    if not spec.get("running", True):
        return held
    held |= {"cpu": int(spec["cpu"]), "memory-gib": int(spec["memory_gib"])}
    if spec.get("gpu") and int(spec.get("gpus") or 0) > 0:
        held[spec["gpu"]] = int(spec["gpus"])
    return held


def scale(
    spec: Mapping[str, Any], changes: Mapping[str, Any], ctx: LaunchContext
) -> dict[str, Any]:
    """A new spec with more or fewer vCPUs, memory or GPUs, or a larger disk (a disk
    never shrinks). A running VM takes the new size at its next restart."""
    changes = as_mapping(changes)
    errors = FieldErrors()
    for name in sorted(set(changes) - SCALABLE):
        errors.add(
            name[:100],
            "Cannot be changed on an existing VM." if name in FIELDS else "Unknown field.",
        )
    merged = {**spec, **{k: v for k, v in changes.items() if k in SCALABLE}}
    cpu = _size(merged, "cpu", MAX_CPU, errors)
    memory = _size(merged, "memory_gib", MAX_MEMORY_GIB, errors)
    disk = _size(merged, "disk_gib", MAX_DISK_GIB, errors)
    if disk is not None and disk < int(spec["disk_gib"]):
        errors.add("disk_gib", f"A disk can only grow: it holds {spec['disk_gib']} GiB now.")
    gpus = int(spec.get("gpus") or 0)
    if "gpus" in changes:
        if not spec.get("gpu"):
            errors.add("gpus", "This VM has no GPU model: create a VM with GPUs instead.")
        else:
            checked = errors.check(gpu_offer, spec["gpu"], ctx, allow=frozenset({"gpu"}))
            if checked is not None:
                # 0 keeps the model: the VM can get its GPUs back by scaling up again.
                scaled = errors.check(
                    count_per_node, changes["gpus"], checked[1], field_name="gpus", minimum=0
                )
                gpus = gpus if scaled is None else scaled
    errors.raise_if_any()
    return {**spec, "cpu": cpu, "memory_gib": memory, "disk_gib": disk, "gpus": gpus}


def _iso_now(now: dt.datetime | None) -> str:
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def power(
    spec: Mapping[str, Any], action: str, *, now: dt.datetime | None = None
) -> dict[str, Any]:
    """The spec after `start`, `stop` or `restart` (which also starts a stopped VM).

    A restart stamps `restarted_at` (now, UTC): see `VirtualMachineKind.needs_restart`.
    """
    if action not in POWER_ACTIONS:
        raise SpecError({"action": [f"One of {', '.join(POWER_ACTIONS)}."]})
    new = {**spec, "running": action != "stop"}
    if action == "restart":
        new["restarted_at"] = _iso_now(now)
    return new
