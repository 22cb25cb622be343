"""The KubeVirt VirtualMachine a VM's spec becomes: a CDI root disk, cloud-init with the SSH key,
whole GPUs by passthrough (its launcher pod queued in the tenant's Kueue queue), requests equal
to limits, a dedicated tenant's nodes only."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..base import BuildContext, Manifest, ObjectKey
from .passthrough import PASSTHROUGH_DEVICES

API_VERSION = "kubevirt.io/v1"
CDI_API_VERSION = "cdi.kubevirt.io/v1beta1"
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
VM_NAME_LABEL = "kubevirt.io/vm"


def manifests(spec: Mapping[str, Any], ctx: BuildContext) -> list[Manifest]:
    """The VirtualMachine (KubeVirt makes the VMI, CDI the root disk from its template)."""
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
    # Kueue's LocalQueue defaulting queues a launcher pod without GPUs by itself: at the
    # kind's priority, so a GPU pod of a lower kind short of CPU cannot preempt the VM.
    template_labels = {**ctx.labels, VM_NAME_LABEL: ctx.name, **ctx.priority_labels}
    if spec.get("gpu") and int(spec.get("gpus") or 0) > 0:
        device = PASSTHROUGH_DEVICES[spec["gpu"].split(":", 1)[1]]
        devices["gpus"] = [
            {"name": f"gpu{i}", "deviceName": device.resource_name}
            for i in range(int(spec["gpus"]))
        ]
        # KubeVirt copies the template's labels to the VMI and its virt-launcher pod, which
        # Kueue's pod integration then holds until the tenant's queue admits its GPUs.
        template_labels |= ctx.admission_labels
    template_metadata: dict[str, Any] = {"labels": template_labels}
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


def disk_expansion(spec: Mapping[str, Any], ctx: BuildContext) -> tuple[ObjectKey, dict[str, Any]]:
    """The PVC and the merge patch that grow the root disk to `spec["disk_gib"]`: CDI does not
    resize a DataVolume's PVC after import (its StorageClass must allow volume expansion)."""
    patch = {"spec": {"resources": {"requests": {"storage": f"{int(spec['disk_gib'])}Gi"}}}}
    return ("v1", "PersistentVolumeClaim", root_disk_name(ctx)), patch
