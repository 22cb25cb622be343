"""KubeVirt and CDI for the simulated fleet: a VirtualMachine's DataVolumes are imported
(ImportInProgress, Succeeded), then its VirtualMachineInstance boots from the template
(Scheduling, Scheduled, Running with an address), and the VM reports it (Provisioning,
Starting, Running; Stopped when halted; RestartRequired when its template changed under a
running VMI, which KubeVirt leaves as it is until a restart deletes it). Pure.

virt-controller runs each VMI in a virt-launcher pod (owned by the VMI, with its labels, node
selector and tolerations, asking for its CPU, memory and passthrough GPUs by their resource
names): the pod is what Kueue admits (a VM sent to its tenant's queue waits gated) and what the
scheduler binds. The VMI stays Scheduling until its pod is bound, says the scheduler's words
when no node takes it, and boots from the moment its pod was placed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .simulated_clock import Clock, Status, condition, digest, generation, iso, parse_iso
from .simulated_operators import (
    PLACED_LATE,
    Made,
    Plan,
    by_kind,
    meta_of,
    name_and_namespace,
    owner_reference,
    ready_since,
)

Manifest = dict[str, Any]
KUBEVIRT = "kubevirt.io/v1"
CDI = "cdi.kubevirt.io/v1beta1"
LAUNCHER_LABEL = "kubevirt.io"
CREATED_BY_LABEL = "kubevirt.io/created-by"
LAUNCHER_IMAGE = "quay.io/kubevirt/virt-launcher:v1.9.0"


def _kubevirt_condition(kind: str, status: str, since: str, reason: str = "", message: str = ""):
    found: Status = {"type": kind, "status": status, "lastTransitionTime": since}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


def data_volume(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """CDI importing a container disk into the claim: ImportInProgress, then Succeeded."""
    name, _ = name_and_namespace(obj)
    bound = condition("Bound", True, "Bound", f"PVC {name} Bound", clock.since, 1)
    if not clock.ready:
        return {
            "phase": "ImportInProgress",
            "progress": f"{100 * clock.progress:.2f}%",
            "claimName": name,
            "conditions": [
                _strip(bound),
                _strip(condition("Ready", False, "TransferRunning", "", clock.since, 1)),
                _strip(condition("Running", True, "", "", clock.since, 1)),
            ],
        }
    return {
        "phase": "Succeeded",
        "progress": "100.0%",
        "claimName": name,
        "conditions": [
            _strip(bound),
            _strip(condition("Ready", True, "", "", clock.since, 1)),
            _strip(condition("Running", False, "Completed", "Import Complete", clock.since, 1)),
        ],
    }


def _strip(cond: Status) -> Status:
    """CDI's conditions: no observedGeneration; lastHeartbeatTime as it probes."""
    cond = {k: v for k, v in cond.items() if k != "observedGeneration"}
    return cond | {"lastHeartbeatTime": cond["lastTransitionTime"]}


def _address(obj: Manifest) -> tuple[str, str]:
    """A VMI's pod address and MAC: new with every VMI (a restart changes the address)."""
    seed = hashlib.sha256(str((obj.get("metadata") or {}).get("uid", "")).encode()).digest()
    ip = f"10.244.{seed[0] % 64}.{2 + seed[1] % 250}"
    mac = "02:" + ":".join(f"{b:02x}" for b in seed[2:7])
    return ip, mac


def _unschedulable(pod: Manifest | None) -> str:
    """The scheduler's words on a launcher pod no node takes ("" when none were said)."""
    for cond in ((pod or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "Unschedulable":
            return str(cond.get("message") or "")
    return ""


def _booting_from(clock: Clock, pod: Manifest | None) -> Clock:
    """The VMI's clock from when its launcher pod was placed: at once, or once Kueue admitted
    it or room freed up (the pod's placed-late mark)."""
    annotations = ((pod or {}).get("metadata") or {}).get("annotations") or {}
    placed = parse_iso(annotations.get(PLACED_LATE))
    return replace(clock, changed_at=placed) if placed and placed > clock.changed_at else clock


def virtual_machine_instance(obj: Manifest, clock: Clock, children: Sequence[Manifest]):
    """virt-handler: Scheduling (while its launcher pod waits for Kueue or a node), Scheduled,
    then Running with the guest's address, on the node its launcher pod was bound to."""
    pod = next(iter(_children(children, "Pod")), None)
    node = ((pod or {}).get("spec") or {}).get("nodeName") or ""
    devices = (((obj.get("spec") or {}).get("domain") or {}).get("devices")) or {}
    stamps = [{"phase": "Pending", "phaseTransitionTimestamp": iso(clock.changed_at)},
              {"phase": "Scheduling", "phaseTransitionTimestamp": iso(clock.changed_at)}]
    not_running = _kubevirt_condition(
        "Ready", "False", clock.since, "GuestNotRunning", "Guest VM is not reported as running"
    )
    if not node:  # waiting for Kueue, or for a node with room (then in the scheduler's words)
        verdict = _unschedulable(pod)
        conditions = [not_running]
        if verdict:
            conditions.insert(0, _kubevirt_condition(
                "PodScheduled", "False", clock.since, "Unschedulable", verdict))
        return {
            "phase": "Scheduling",
            "conditions": conditions,
            "guestOSInfo": {},
            "qosClass": "Guaranteed",
            "phaseTransitionTimestamps": stamps,
        }
    clock = _booting_from(clock, pod)
    if not clock.ready:
        scheduled = clock.progress >= 0.5
        status: Status = {
            "phase": "Scheduled" if scheduled else "Scheduling",
            "conditions": [not_running],
            "guestOSInfo": {},
            "qosClass": "Guaranteed",
            "phaseTransitionTimestamps": stamps,
        }
        if scheduled:
            status["nodeName"] = node
            status["phaseTransitionTimestamps"] = [
                *stamps, {"phase": "Scheduled", "phaseTransitionTimestamp": iso(clock.at(0.5))}
            ]
        return status
    ip, mac = _address(obj)
    interface = ((devices.get("interfaces") or [{}])[0] or {}).get("name", "default")
    migratable = (
        _kubevirt_condition("LiveMigratable", "False", clock.since, "HostDeviceNotLiveMigratable",
                            "VMI uses a host device (GPU passthrough)")
        if devices.get("gpus")
        else _kubevirt_condition("LiveMigratable", "False", clock.since,
                                 "DisksNotLiveMigratable",
                                 "cannot migrate VMI: PVC is not shared, live migration "
                                 "requires that all PVCs must be shared (using ReadWriteMany "
                                 "access mode)")
    )
    return {
        "phase": "Running",
        "nodeName": node,
        "conditions": [
            _kubevirt_condition("Ready", "True", clock.since),
            migratable,
            _kubevirt_condition("AgentConnected", "True", clock.since),
        ],
        "interfaces": [
            {
                "name": interface,
                "interfaceName": "eth0",
                "infoSource": "domain, guest-agent",
                "ipAddress": ip,
                "ipAddresses": [ip],
                "mac": mac,
                "queueCount": 1,
            }
        ],
        "guestOSInfo": {"id": "linux", "name": "Linux"},
        "qosClass": "Guaranteed",
        "migrationMethod": "BlockMigration",
        "phaseTransitionTimestamps": [
            *stamps,
            {"phase": "Scheduled", "phaseTransitionTimestamp": iso(clock.at(0.5))},
            {"phase": "Running", "phaseTransitionTimestamp": clock.since},
        ],
    }


def _children(children: Sequence[Manifest], kind: str) -> list[Manifest]:
    return [c for c in children if c.get("kind") == kind]


def virtual_machine(obj: Manifest, clock: Clock, children: Sequence[Manifest]) -> Status:
    """virt-controller: the VM's printableStatus and conditions from its DataVolumes and
    VirtualMachineInstance (Provisioning → Starting → Running; Stopped when halted)."""
    spec, gen = obj.get("spec") or {}, generation(obj)
    since = clock.since
    status: Status = {
        "observedGeneration": gen,
        "desiredGeneration": gen,
        "runStrategy": spec.get("runStrategy") or ("Always" if spec.get("running") else "Halted"),
        "volumeSnapshotStatuses": [
            {"name": v.get("name", ""), "enabled": False,
             "reason": "No VolumeSnapshotClass: Volume snapshots are not configured for this "
                       "StorageClass"}
            for v in ((spec.get("template") or {}).get("spec") or {}).get("volumes") or []
            if isinstance(v, dict) and "dataVolume" in v
        ],
    }
    vmi = next(iter(_children(children, "VirtualMachineInstance")), None)
    volumes = _children(children, "DataVolume")
    if not _running_wanted(spec):
        stopping = vmi is not None
        return status | {
            "printableStatus": "Stopping" if stopping else "Stopped",
            "created": stopping,
            "ready": False,
            "conditions": [
                _kubevirt_condition("Ready", "False", since, "VMINotExists", "VMI does not exist")
            ],
        }
    volumes_ready = all((v.get("status") or {}).get("phase") == "Succeeded" for v in volumes)
    wanted = {t.get("metadata", {}).get("name") for t in spec.get("dataVolumeTemplates") or []}
    volumes_ready = volumes_ready and wanted <= {name_and_namespace(v)[0] for v in volumes}
    if vmi is None or not volumes_ready:
        conditions = [
            _kubevirt_condition("Ready", "False", since, "VMINotExists", "VMI does not exist")
        ]
        if not volumes_ready:
            conditions.append(_kubevirt_condition(
                "DataVolumesReady", "False", since, "DataVolumeImporting",
                "Not all of the VMI's DVs are ready",
            ))
        return status | {
            "printableStatus": "Provisioning" if not volumes_ready else "Starting",
            "created": False,
            "ready": False,
            "conditions": conditions,
        }
    vmi_status = vmi.get("status") or {}
    unschedulable = next(
        (c for c in vmi_status.get("conditions") or []
         if c.get("type") == "PodScheduled" and c.get("status") == "False"),
        None,
    )
    if unschedulable is not None:  # KubeVirt mirrors the launcher pod's verdict
        return status | {
            "printableStatus": "ErrorUnschedulable",
            "created": True,
            "ready": False,
            "conditions": [
                dict(unschedulable),
                _kubevirt_condition("Ready", "False", since, "GuestNotRunning",
                                    "Guest VM is not reported as running"),
            ],
        }
    running = vmi_status.get("phase") == "Running"
    ready = next(
        (c for c in vmi_status.get("conditions") or [] if c.get("type") == "Ready"),
        _kubevirt_condition("Ready", "False", since, "GuestNotRunning"),
    )
    conditions = [dict(ready)]
    if volumes:
        conditions.append(_kubevirt_condition("DataVolumesReady", "True", since))
    if running and (vmi.get("spec") or {}) != ((spec.get("template") or {}).get("spec") or {}):
        conditions.append(_kubevirt_condition(
            "RestartRequired", "True", since, "",
            "a non-live-updatable field was changed in the template spec",
        ))
    return status | {
        "printableStatus": "Running" if running else "Starting",
        "created": True,
        "ready": running and ready.get("status") == "True",
        "conditions": conditions,
    }


# --- what virt-controller and CDI make --------------------------------------------------------


def _running_wanted(spec: Manifest) -> bool:
    strategy = spec.get("runStrategy")
    if strategy is None:
        return bool(spec.get("running", False))
    return strategy in ("Always", "RerunOnFailure", "Once")


def plan_virtual_machine(vm: Manifest, clock: Clock, children: Sequence[Manifest]) -> Plan:
    """virt-controller and CDI: the VM's DataVolumes at once; once they are imported, a
    VirtualMachineInstance from the template while the VM should run (none while halted).
    A running VMI is kept as it is: a changed template waits for a restart."""
    meta, spec = meta_of(vm), vm.get("spec") or {}
    template = spec.get("template") or {}
    volumes = by_kind(children, "DataVolume")
    made = []
    for template_volume in spec.get("dataVolumeTemplates") or []:
        volume_meta = template_volume.get("metadata") or {}
        existing = volumes.get(volume_meta.get("name", ""))
        made.append(Made(existing or {
            "apiVersion": CDI,
            "kind": "DataVolume",
            "metadata": {
                "name": volume_meta.get("name", ""),
                "namespace": meta.get("namespace", "default"),
                "labels": dict(volume_meta.get("labels") or {}),
                "annotations": dict(volume_meta.get("annotations") or {}),
                "ownerReferences": [owner_reference(vm)],
            },
            "spec": dict(template_volume.get("spec") or {}),
        }, clock.created_at))
    prune = frozenset({(KUBEVIRT, "VirtualMachineInstance")})
    if not _running_wanted(spec):
        return Plan(tuple(made), prune)
    vmi = by_kind(children, "VirtualMachineInstance").get(meta["name"])
    if vmi is not None:
        return Plan((*made, Made(vmi, clock.now)), prune)
    imported = [ready_since(volumes.get(m.manifest["metadata"]["name"])) for m in made]
    if any(moment is None for moment in imported):
        return Plan(tuple(made), prune)  # Provisioning: the disks are still importing
    # Its VMI is gone while it ran (a restart, or deleted by hand): a new one boots now.
    # Otherwise it would have booted once the VM was started and its disks were there.
    had_one = ((vm.get("status") or {}).get("created")) is True
    at = clock.now if had_one else max([clock.changed_at, *imported])  # type: ignore[list-item]
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    annotations = dict((template.get("metadata") or {}).get("annotations") or {})
    annotations |= {
        "kubevirt.io/latest-observed-api-version": "v1",
        "kubevirt.io/storage-observed-api-version": "v1",
    }
    instance = {
        "apiVersion": KUBEVIRT,
        "kind": "VirtualMachineInstance",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", "default"),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(vm)],
        },
        "spec": dict(template.get("spec") or {}),
    }
    return Plan((*made, Made(instance, min(at, clock.now))), prune)


def launcher_pod(vmi: Manifest) -> Manifest:
    """The virt-launcher pod virt-controller makes for a VMI: the VMI's labels (so a VM sent
    to its tenant's queue is queued), node selector and tolerations; requests equal to limits:
    its CPU, its memory and one of the device plugin's resource per passthrough GPU."""
    meta, spec = meta_of(vmi), vmi.get("spec") or {}
    domain = spec.get("domain") or {}
    asked = {k: str(v) for k, v in ((domain.get("resources") or {}).get("requests") or {}).items()
             if k in ("cpu", "memory")}
    for device in (domain.get("devices") or {}).get("gpus") or []:
        name = device.get("deviceName", "")
        asked[name] = str(int(asked.get(name, "0")) + 1)
    pod_spec: Manifest = {
        "containers": [{"name": "compute", "image": LAUNCHER_IMAGE,
                        "resources": {"requests": dict(asked), "limits": dict(asked)}}],
    }
    for key in ("nodeSelector", "tolerations"):
        if spec.get(key):
            pod_spec[key] = spec[key]
    uid = meta.get("uid", "")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"virt-launcher-{meta['name']}-{digest(uid)[:5]}",
            "namespace": meta.get("namespace", "default"),
            "labels": dict(meta.get("labels") or {})
            | {LAUNCHER_LABEL: "virt-launcher", CREATED_BY_LABEL: uid},
            "ownerReferences": [owner_reference(vmi)],
        },
        "spec": pod_spec,
    }


def plan_virtual_machine_instance(
    vmi: Manifest, clock: Clock, children: Sequence[Manifest]
) -> Plan:
    """virt-controller: the VMI's launcher pod, made with the VMI and kept as it is."""
    pod = next(iter(_children(children, "Pod")), None)
    if pod is not None:
        return Plan((Made(pod, clock.now),))
    return Plan((Made(launcher_pod(vmi), clock.changed_at),))
