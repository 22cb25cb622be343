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
                    passed through) and how many (0..the largest node's count; 0 is none)
    ssh_public_key  one OpenSSH public key, put in the default user's authorized_keys
    running         power state (default true): `spec.runStrategy` Always or Halted
    restarted_at    set by `power(spec, "restart")`, never typed by a person

The root disk is a `dataVolumeTemplates` entry, not a containerDisk: a containerDisk is
ephemeral (every restart boots a fresh copy of the image), a DataVolume is a PVC the VM keeps
across stop and start, so "stopped" means what a person expects.

Passthrough: each `gpu:<model>` maps to the extended resource the NVIDIA sandbox device plugin
(GPU Operator, node label `nvidia.com/gpu.workload.config=vm-passthrough`) advertises for it
(`vm.passthrough.PASSTHROUGH_DEVICES`). KubeVirt only schedules these if the platform admins
permit them in the `KubeVirt` CR, `spec.configuration.permittedHostDevices`
(`vm.passthrough.permitted_host_devices()` gives the entries). The device resource itself
selects nodes of the model, so GPU VMs carry no GPU product selector (GPU Feature Discovery
does not label passthrough nodes).

Observation: the VM's `status.printableStatus` and conditions, the `VirtualMachineInstance`
of the same name for the IP address, and the VMI's virt-launcher pod. The VMI, the DataVolume
and the pod are in `OWNED_KINDS` to be observed (they carry the owner labels, copied from the
templates) although KubeVirt creates them: the machinery must never prune an object that has an
ownerReference (it belongs to its owner), or it would stop the VM.

Fair share: a VM with GPUs carries the Kueue admission labels (`ctx.admission_labels`: the
tenant's LocalQueue, priority `portal-interactive`) on its template, so its launcher pod is
admitted by Kueue's pod integration against the ClusterQueue's passthrough group
(`tenants.enforcement.manifests.kueue`); while the pod keeps Kueue's admission gate, the VM is
progressing with reason `Queued`. A VM without GPUs carries the priority label alone (Kueue's
LocalQueue defaulting queues its launcher pod, as the other kinds' pods without GPUs).

Restart: KubeVirt does not restart a running VM when its template changes (it only sets the
`RestartRequired` condition). `power(spec, "restart")` stamps `restarted_at` into the spec and
the template annotation `kubectl.kubernetes.io/restartedAt`; once applied, `needs_restart()`
says the running VMI predates it, and the machinery deletes that VMI: under runStrategy Always
the VM controller boots a new one from the template. Sizes changed by `scale()` take effect at
the next restart the same way (the page shows `restart_required`); a grown disk needs the PVC
patch `disk_expansion()` gives.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from ..base import BuildContext, Connection, LaunchContext, Manifest, ObjectKey, Observation
from . import manifests as _manifests
from . import spec as _spec
from . import status as _status
from .manifests import API_VERSION, CDI_API_VERSION, cloud_config, disk_expansion, root_disk_name
from .passthrough import PASSTHROUGH_DEVICES, PassthroughDevice, permitted_host_devices
from .spec import FIELDS, power
from .status import needs_restart

__all__ = [
    "FIELDS",
    "KEY",
    "KIND",
    "LABEL",
    "OWNED_KINDS",
    "PASSTHROUGH_DEVICES",
    "PassthroughDevice",
    "VirtualMachineKind",
    "cloud_config",
    "disk_expansion",
    "needs_restart",
    "permitted_host_devices",
    "power",
    "root_disk_name",
]


class VirtualMachineKind:
    """A KubeVirt virtual machine with a persistent root disk and optional whole GPUs."""

    KEY: ClassVar[str] = "vm"
    LABEL: ClassVar[str] = "VM"
    OWNED_KINDS: ClassVar[tuple[tuple[str, str], ...]] = (
        (API_VERSION, "VirtualMachine"),
        # Created by KubeVirt and CDI from the VM; observed, never pruned (ownerReferences).
        (API_VERSION, "VirtualMachineInstance"),
        (CDI_API_VERSION, "DataVolume"),
        # The VMI's virt-launcher pod, which carries the template's labels: Kueue's admission
        # gate on it says the VM waits in the tenant's queue.
        ("v1", "Pod"),
    )

    def validate(self, spec: Mapping[str, Any], ctx: LaunchContext) -> dict[str, Any]:
        return _spec.validate(spec, ctx)

    def demand(self, spec: Mapping[str, Any]) -> dict[str, int]:
        return _spec.demand(spec)

    def manifests(self, spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]:
        return _manifests.manifests(spec, ctx)

    def observe(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Observation:
        return _status.observe(objects, spec, ctx)

    def needs_restart(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> bool:
        return _status.needs_restart(objects, spec, ctx)

    def scale(
        self, spec: Mapping[str, Any], changes: Mapping[str, Any], ctx: LaunchContext
    ) -> dict[str, Any]:
        return _spec.scale(spec, changes, ctx)

    def connection(
        self, objects: Mapping[ObjectKey, Manifest], spec: Mapping[str, Any], ctx: BuildContext
    ) -> Connection:
        return _status.connection(objects, spec, ctx)

    def gpu_pods(self, spec: Mapping[str, Any], ctx: BuildContext) -> str:
        # The VMI is named after the VM; KubeVirt runs it in `virt-launcher-<vmi>-<suffix>`.
        return re.escape(f"virt-launcher-{ctx.name}-") + r"[a-z0-9]+"


KIND = VirtualMachineKind()
KEY = VirtualMachineKind.KEY
LABEL = VirtualMachineKind.LABEL
OWNED_KINDS = VirtualMachineKind.OWNED_KINDS
