"""Virtual machines: one KubeVirt `VirtualMachine` (`kubevirt.io/v1`) per workload, booted from
a root disk that CDI imports from a container-disk image, with whole GPUs by PCI passthrough.

The spec a person gives (`validate` returns it clean, with what it resolved from the catalog):

    image           key of the admins' boot images, `ctx.catalog["vm_images"]`:
                    {key: {"label", "container_disk" (OCI reference), "min_disk_gib",
                    "default_user"}}; or, instead,
    custom_image    a container-disk image of one's own (a valid OCI reference, registry
                    required) with `default_user`, the user its cloud-init creates
    cpu, memory_gib, disk_gib   vCPUs (1..128), GiB of memory (1..2048), GiB of root disk (at
                    least the image's `min_disk_gib`, at most 16384)
    gpu, gpus       optional whole-GPU class `gpu:<model>` of the pool (MIG and HAMi cannot be
                    passed through) and how many (1..the largest node's count)
    ssh_public_key  one OpenSSH public key, put in the default user's authorized_keys
    running         power state (default true): `spec.runStrategy` Always or Halted
    restarted_at    set by `power(spec, "restart")`, never typed by a person

The root disk is a `dataVolumeTemplates` entry, not a containerDisk: a containerDisk is
ephemeral (every restart boots a fresh copy of the image), a DataVolume is a PVC the VM keeps
across stop and start, so "stopped" means what a person expects.

Passthrough: each `gpu:<model>` maps to the extended resource the NVIDIA sandbox device plugin
(GPU Operator, node label `nvidia.com/gpu.workload.config=vm-passthrough`) advertises for it
(`gpu_passthrough.PASSTHROUGH_DEVICES`). KubeVirt only schedules these if the platform admins
permit them in the `KubeVirt` CR, `spec.configuration.permittedHostDevices`
(`gpu_passthrough.permitted_host_devices()` gives the entries). The device resource itself
selects nodes of the model, so GPU VMs carry no GPU product selector (GPU Feature Discovery
does not label passthrough nodes).

Observation: the VM's `status.printableStatus` and conditions, and the `VirtualMachineInstance`
of the same name for the IP address. The VMI and the DataVolume are in `OWNED_KINDS` to be
observed (they carry the owner labels, copied from the templates) although KubeVirt creates
them: the machinery must never prune an object that has an ownerReference (it belongs to its
owner), or it would stop the VM.

Restart: KubeVirt does not restart a running VM when its template changes (it only sets the
`RestartRequired` condition). `power(spec, "restart")` stamps `restarted_at` into the spec and
the template annotation `kubectl.kubernetes.io/restartedAt`; once applied, `needs_restart()`
says the running VMI predates it, and the machinery deletes that VMI: under runStrategy Always
the VM controller boots a new one from the template. Sizes changed by `scale()` take effect at
the next restart the same way (the page shows `restart_required`); a grown disk needs the PVC
patch `disk_expansion()` gives.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .base import (
    BuildContext,
    Connection,
    LaunchContext,
    Manifest,
    ObjectKey,
    Observation,
    SpecError,
    condition,
    whole,
)
from .gpu_passthrough import PASSTHROUGH_DEVICES
from .image_references import oci_reference
from .spec_checks import FieldErrors, as_mapping, boolean, count_per_node, gpu_offer
from .ssh_keys import public_key

API_VERSION = "kubevirt.io/v1"
CDI_API_VERSION = "cdi.kubevirt.io/v1beta1"
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
VM_NAME_LABEL = "kubevirt.io/vm"

MAX_CPU = 128
MAX_MEMORY_GIB = 2048
MAX_DISK_GIB = 16384
USERNAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")


# printableStatus → what it means for the portal (KubeVirt v1.9 `VirtualMachinePrintableStatus`)
PROGRESSING_STATUSES = frozenset(
    {
        "Provisioning",
        "Starting",
        "Stopping",
        "WaitingForVolumeBinding",
        "WaitingForReceiver",
        "Terminating",
    }
)
FAILED_STATUSES = frozenset(
    {
        "ErrorUnschedulable",
        "ErrImagePull",
        "ImagePullBackOff",
        "ErrorPvcNotFound",
        "ErrorDataVolumeNotFound",
        "DataVolumeError",
        "CrashLoopBackOff",
    }
)
# Where each failure's words are, in the VM's conditions (KubeVirt mirrors the VMI's there).
_FAILURE_CONDITIONS = (
    ("PodScheduled", "False"),
    ("Synchronized", "False"),
    ("DataVolumesReady", "False"),
    ("Failure", "True"),
    ("Ready", "False"),
)

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


def _newest_first(conditions: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    return tuple(
        sorted(conditions, key=lambda c: str(c.get("lastTransitionTime") or ""), reverse=True)
    )


def _failure_words(vm: Manifest) -> str:
    for kind, status in _FAILURE_CONDITIONS:
        cond = condition(vm, kind)
        if cond and cond.get("status") == status and cond.get("message"):
            return str(cond["message"])
    failure = (vm.get("status") or {}).get("startFailure") or {}
    if failure.get("consecutiveFailCount"):
        return (
            f"The VM failed to start {failure['consecutiveFailCount']} times in a row; "
            f"KubeVirt retries after {failure.get('retryAfterTimestamp', 'a back-off')}."
        )
    return ""


def _ip_address(vmi: Manifest | None) -> str:
    interfaces = ((vmi or {}).get("status") or {}).get("interfaces") or []
    if not interfaces or not isinstance(interfaces[0], Mapping):
        return ""
    first = interfaces[0]
    return str(first.get("ipAddress") or next(iter(first.get("ipAddresses") or []), ""))


class VirtualMachineKind:
    """A KubeVirt virtual machine with a persistent root disk and optional whole GPUs."""

    KEY: ClassVar[str] = "vm"
    LABEL: ClassVar[str] = "Virtual machine"
    OWNED_KINDS: ClassVar[tuple[tuple[str, str], ...]] = (
        (API_VERSION, "VirtualMachine"),
        # Created by KubeVirt and CDI from the VM; observed, never pruned (ownerReferences).
        (API_VERSION, "VirtualMachineInstance"),
        (CDI_API_VERSION, "DataVolume"),
    )

    # -- validate -------------------------------------------------------------------------

    def validate(self, spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
        spec = as_mapping(spec)
        errors = FieldErrors()
        for name in sorted(set(spec) - FIELDS):
            errors.add(name[:100], "Unknown field.")
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
        gpu, gpus = self._gpus(spec, ctx, errors)
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

    def _gpus(
        self, spec: Mapping[str, Any], ctx: LaunchContext, errors: FieldErrors
    ) -> tuple[str, int]:
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
                "mig": "A VM gets whole GPUs by PCI passthrough: MIG partitions are for "
                "containers.",
                "hami": "A VM gets whole GPUs by PCI passthrough: HAMi shares are for containers.",
            },
        )
        if checked is None:
            return "", 0
        resource_class, offer = checked
        if resource_class.gpu_model.key not in PASSTHROUGH_DEVICES:
            errors.add("gpu", f"{resource_class.label} cannot be passed through to a VM here.")
            return "", 0
        gpus = errors.check(count_per_node, spec.get("gpus"), offer, field_name="gpus")
        return resource_class.key, gpus or 0

    # -- demand ---------------------------------------------------------------------------

    def demand(self, spec: Mapping[str, Any]) -> dict[str, int]:
        """Running: its GPUs, vCPUs, memory and disk. Stopped: only its disk, which it keeps;
        the GPUs, vCPUs and memory go back to the tenant's free quota."""
        held = {"storage-gib": int(spec["disk_gib"]), "count:vm": 1}
        if not spec.get("running", True):
            return held
        held |= {"cpu": int(spec["cpu"]), "memory-gib": int(spec["memory_gib"])}
        if spec.get("gpu") and int(spec.get("gpus") or 0) > 0:
            held[spec["gpu"]] = int(spec["gpus"])
        return held

    # -- manifests ------------------------------------------------------------------------

    def manifests(self, spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]:
        disk_name = root_disk_name(ctx)
        memory = f"{int(spec['memory_gib'])}Gi"
        cpu = str(int(spec["cpu"]))
        devices: dict[str, Any] = {
            "disks": [
                {"name": "root", "disk": {"bus": "virtio"}, "bootOrder": 1},
                {"name": "cloudinit", "disk": {"bus": "virtio"}},
            ],
            "interfaces": [{"name": "default", "masquerade": {}}],
        }
        if spec.get("gpu") and int(spec.get("gpus") or 0) > 0:
            device = PASSTHROUGH_DEVICES[spec["gpu"].split(":", 1)[1]]
            devices["gpus"] = [
                {"name": f"gpu{i}", "deviceName": device.resource_name}
                for i in range(int(spec["gpus"]))
            ]
        template_metadata: dict[str, Any] = {"labels": {**ctx.labels, VM_NAME_LABEL: ctx.name}}
        if spec.get("restarted_at"):
            template_metadata["annotations"] = {RESTARTED_AT_ANNOTATION: spec["restarted_at"]}
        template_spec: dict[str, Any] = {
            "domain": {
                "cpu": {"cores": int(spec["cpu"]), "sockets": 1, "threads": 1},
                "memory": {"guest": memory},
                # Requests = limits: the quota counts what the VM really holds, and the
                # namespace's LimitRange default limit (1 CPU) cannot undercut the request.
                "resources": {
                    "requests": {"cpu": cpu, "memory": memory},
                    "limits": {"cpu": cpu, "memory": memory},
                },
                "devices": devices,
            },
            "networks": [{"name": "default", "pod": {}}],
            "volumes": [
                {"name": "root", "dataVolume": {"name": disk_name}},
                {"name": "cloudinit", "cloudInitNoCloud": {"userData": cloud_config(spec)}},
            ],
        }
        # Dedicated tenants run on their reserved nodes only; the passthrough resource already
        # picks the GPU model, so no product label (passthrough nodes have none).
        if selector := ctx.gpu_node_selector(None):
            template_spec["nodeSelector"] = selector
        if tolerations := ctx.gpu_tolerations():
            template_spec["tolerations"] = tolerations
        root_disk = {
            "metadata": {"name": disk_name, "labels": ctx.labels},
            "spec": {
                # CDI imports the container disk's image into a PVC of the asked size.
                "source": {"registry": {"url": f"docker://{spec['container_disk']}"}},
                "storage": {"resources": {"requests": {"storage": f"{int(spec['disk_gib'])}Gi"}}},
            },
        }
        return [
            {
                "apiVersion": API_VERSION,
                "kind": "VirtualMachine",
                "metadata": ctx.metadata(ctx.name, labels={VM_NAME_LABEL: ctx.name}),
                "spec": {
                    "runStrategy": "Always" if spec.get("running", True) else "Halted",
                    "dataVolumeTemplates": [root_disk],
                    "template": {"metadata": template_metadata, "spec": template_spec},
                },
            }
        ]

    # -- observe --------------------------------------------------------------------------

    def observe(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Observation:
        vm = objects.get((API_VERSION, "VirtualMachine", ctx.name))
        if vm is None:
            return Observation(state="absent")
        vmi = objects.get((API_VERSION, "VirtualMachineInstance", ctx.name))
        status = vm.get("status") or {}
        printable = str(status.get("printableStatus") or "")
        wants_running = bool(spec.get("running", True))
        conditions = _newest_first(
            [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
        )
        restart_required = (condition(vm, "RestartRequired") or {}).get("status") == "True"
        details: dict[str, Any] = {
            "printable_status": printable or "Pending",
            "power": "running" if wants_running else "stopped",
            "ip": _ip_address(vmi),
            "node": str(((vmi or {}).get("status") or {}).get("nodeName") or ""),
            "restart_pending": self.needs_restart(objects, spec, ctx),
            "restart_required": restart_required,
        }
        disk = objects.get((CDI_API_VERSION, "DataVolume", root_disk_name(ctx)))
        if progress := ((disk or {}).get("status") or {}).get("progress"):
            details["disk_import_progress"] = str(progress)

        def seen(state: str, reason: str = "", message: str = "") -> Observation:
            return Observation(state, reason or printable, message, conditions, details)

        if printable in FAILED_STATUSES:
            return seen("failed", message=_failure_words(vm))
        if not wants_running:
            if printable == "Stopped":
                # A settled state: its disk is kept, it holds no GPU, nothing is left to do.
                return seen("ready", message="Stopped: the disk is kept, no GPU is held.")
            return seen("progressing", message="Stopping.")
        if details["restart_pending"]:
            return seen("progressing", "Restarting", "Restarting as asked.")
        ready = condition(vm, "Ready") or {}
        if printable in ("Running", "Migrating"):
            if ready.get("status") == "True":
                message = "Restart it to apply the new size." if restart_required else ""
                return seen("ready", message=message)
            return seen("degraded", str(ready.get("reason") or ""), str(ready.get("message") or ""))
        if printable == "Paused":
            return seen("degraded", message="Paused: unpause it to use it again.")
        return seen("progressing", message=str(ready.get("message") or "") if printable else "")

    def needs_restart(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> bool:
        """True when a restart was asked for (`power(…, "restart")`) and the running VMI
        predates it: the machinery deletes that VMI, and KubeVirt boots a fresh one."""
        asked = spec.get("restarted_at") or ""
        vmi = objects.get((API_VERSION, "VirtualMachineInstance", ctx.name))
        if not asked or not spec.get("running", True) or vmi is None:
            return False
        annotations = (vmi.get("metadata") or {}).get("annotations") or {}
        return annotations.get(RESTARTED_AT_ANNOTATION) != asked

    # -- scale ----------------------------------------------------------------------------

    def scale(
        self, spec: Mapping[str, Any], changes: Mapping[str, Any], ctx: LaunchContext
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
                    gpus = (
                        errors.check(count_per_node, changes["gpus"], checked[1], field_name="gpus")
                        or gpus
                    )
        errors.raise_if_any()
        return {**spec, "cpu": cpu, "memory_gib": memory, "disk_gib": disk, "gpus": gpus}

    # -- connection -----------------------------------------------------------------------

    def connection(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Connection:
        user = spec.get("default_user") or "root"
        target = f"vm/{ctx.name}.{ctx.namespace}"
        ip = _ip_address(objects.get((API_VERSION, "VirtualMachineInstance", ctx.name)))
        items = [("User", user), ("Image", str(spec.get("image_label") or ""))]
        commands = []
        if ip:
            items.insert(0, ("IP address", ip))
            commands.append(("SSH from a pod of your namespace or vCluster", f"ssh {user}@{ip}"))
        commands += [
            ("SSH through the Kubernetes API (virtctl)", f"virtctl ssh {user}@{target}"),
            (
                "Forward a local port to its SSH, then connect",
                f"virtctl port-forward {target} 2222:22 & ssh -p 2222 {user}@127.0.0.1",
            ),
        ]
        notes = [
            "No Service is created for the VM: its address is reachable from pods in your "
            f"namespace {ctx.namespace} (the pods of your vClusters run there too), not from "
            "outside the cluster. From your machine, virtctl tunnels through the Kubernetes API "
            "with your kubeconfig.",
            "The address changes when the VM restarts: use the name, vm/<name>.<namespace>, "
            "with virtctl.",
        ]
        if not spec.get("running", True):
            notes.insert(0, "The VM is stopped: start it to get an address.")
        return Connection(items=tuple(items), commands=tuple(commands), notes=tuple(notes))


def root_disk_name(ctx: BuildContext) -> str:
    """The DataVolume (and PVC) that holds the VM's root disk."""
    return f"{ctx.name}-root"


def cloud_config(spec: Mapping[str, Any]) -> str:
    """cloud-init user data: the key in the image's default user's authorized_keys."""
    # json.dumps quotes the key as a YAML double-quoted scalar: nothing in a comment can break
    # out of the list.
    return "\n".join(
        [
            "#cloud-config",
            "ssh_pwauth: false",
            "ssh_authorized_keys:",
            f"  - {json.dumps(spec['ssh_public_key'])}",
            "",
        ]
    )


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


def disk_expansion(spec: Mapping[str, Any], ctx: BuildContext) -> tuple[ObjectKey, dict[str, Any]]:
    """The PVC and the merge patch that grow the root disk to `spec["disk_gib"]`: CDI does not
    resize a DataVolume's PVC after import (its StorageClass must allow volume expansion)."""
    patch = {"spec": {"resources": {"requests": {"storage": f"{int(spec['disk_gib'])}Gi"}}}}
    return ("v1", "PersistentVolumeClaim", root_disk_name(ctx)), patch


KIND = VirtualMachineKind()
KEY = VirtualMachineKind.KEY
LABEL = VirtualMachineKind.LABEL
OWNED_KINDS = VirtualMachineKind.OWNED_KINDS
