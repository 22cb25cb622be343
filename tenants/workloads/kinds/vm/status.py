"""What the cluster says of a VM (its printableStatus, conditions, VMI, launcher pod and root
disk), whether a restart it was asked for is still to do, and how a person reaches it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base import (
    QUEUED_REASON,
    BuildContext,
    Connection,
    Manifest,
    ObjectKey,
    Observation,
    condition,
    queued_by_kueue,
)
from .manifests import API_VERSION, CDI_API_VERSION, RESTARTED_AT_ANNOTATION, root_disk_name

POD = ("v1", "Pod")
QUEUED_MESSAGE = ("Waiting in the tenant's queue: Kueue starts the VM when the tenant's "
                  "quota, or what its cohort lends, has room.")

# printableStatus → what it means for the portal (KubeVirt v1.9 `VirtualMachinePrintableStatus`):
# Running, Migrating, Paused, Stopped, Unknown are read in `observe`.
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


def launcher_pod(objects: Mapping[ObjectKey, Manifest], vmi: Manifest | None) -> Manifest | None:
    """The VMI's virt-launcher pod (it carries the template's labels, so it is observed): the
    pod the VMI owns, not one left by an instance before it."""
    uid = ((vmi or {}).get("metadata") or {}).get("uid")
    if not uid:
        return None
    return next(
        (obj for (api_version, kind, _), obj in objects.items()
         if (api_version, kind) == POD
         and any(ref.get("kind") == "VirtualMachineInstance" and ref.get("uid") == uid
                 for ref in (obj.get("metadata") or {}).get("ownerReferences") or [])),
        None,
    )


def observe(
    objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
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
        "restart_pending": needs_restart(objects, spec, ctx),
        "restart_required": restart_required,
    }
    disk = objects.get((CDI_API_VERSION, "DataVolume", root_disk_name(ctx)))
    if progress := ((disk or {}).get("status") or {}).get("progress"):
        details["disk_import_progress"] = str(progress)

    def seen(state: str, reason: str = "", message: str = "") -> Observation:
        return Observation(state, reason or printable, message, conditions, details)

    if printable in FAILED_STATUSES:
        return seen("failed", message=_failure_words(vm))
    if printable == "ErrorUnschedulable" and wants_running:
        # No node it may use has room for its GPUs: the scheduler retries, and it starts once
        # room frees up (or it is made smaller). Waiting, in the scheduler's words.
        return seen("degraded", "Unschedulable", _failure_words(vm))
    if not wants_running:
        if printable == "Stopped":
            # A settled state: its disk is kept, it holds no GPU, nothing is left to do.
            return seen("ready", message="Stopped: the disk is kept, no GPU is held.")
        return seen("progressing", message="Stopping.")
    if details["restart_pending"]:
        return seen("progressing", "Restarting", "Restarting as asked.")
    if queued_by_kueue(launcher_pod(objects, vmi)):
        # Its GPUs wait for the tenant's Kueue queue: fair share at work, not a fault.
        return seen("progressing", QUEUED_REASON, QUEUED_MESSAGE)
    ready = condition(vm, "Ready") or {}
    if printable in ("Running", "Migrating"):
        if ready.get("status") == "True":
            message = "Restart it to apply the new size." if restart_required else ""
            return seen("ready", message=message)
        return seen("degraded", str(ready.get("reason") or ""), str(ready.get("message") or ""))
    if printable == "Paused":
        return seen("degraded", message="Paused: unpause it to use it again.")
    if printable in PROGRESSING_STATUSES or printable == "Stopped":
        return seen("progressing", message=str(ready.get("message") or ""))
    # "" (not reconciled yet), "Unknown" (its node does not answer), or a status newer than
    # this module: not settled, and nothing to say it failed.
    return seen(
        "progressing",
        message="KubeVirt has not reported a state yet."
        if not printable
        else f"KubeVirt reports {printable}.",
    )


def needs_restart(
    objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
) -> bool:
    """True when a restart was asked for (`power(…, "restart")`) and the running VMI
    predates it: the machinery deletes that VMI, and KubeVirt boots a fresh one."""
    asked = spec.get("restarted_at") or ""
    vmi = objects.get((API_VERSION, "VirtualMachineInstance", ctx.name))
    if not asked or not spec.get("running", True) or vmi is None:
        return False
    annotations = (vmi.get("metadata") or {}).get("annotations") or {}
    return annotations.get(RESTARTED_AT_ANNOTATION) != asked


def connection(
    objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
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
