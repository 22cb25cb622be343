"""Whole GPUs passed through to KubeVirt VMs: the extended resource each GPU model is
advertised as on a node in passthrough mode, and what the platform admins permit in the
`KubeVirt` CR so that VMs may claim them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PassthroughDevice:
    """A GPU model as the NVIDIA sandbox device plugin advertises it for PCI passthrough: the
    extended resource is its PCI-database name, upper-cased, spaces and brackets as `_`."""

    pci_vendor_selector: str  # vendor:device, as KubeVirt's pciHostDevices want it
    resource_name: str


# One row per model of `inventory.resource_classes.GPU_MODELS` (the SXM variants for the models
# that come in several): check a node with `kubectl describe node | grep nvidia.com/`.
PASSTHROUGH_DEVICES: dict[str, PassthroughDevice] = {
    "nvidia-h200": PassthroughDevice("10DE:2335", "nvidia.com/GH100_H200_SXM_141GB"),
    "nvidia-h100-80gb": PassthroughDevice("10DE:2330", "nvidia.com/GH100_H100_SXM5_80GB"),
    "nvidia-a100-80gb": PassthroughDevice("10DE:20B2", "nvidia.com/GA100_A100_SXM4_80GB"),
    "nvidia-l40s": PassthroughDevice("10DE:26B9", "nvidia.com/AD102GL_L40S"),
    "nvidia-rtx-4000-ada": PassthroughDevice(
        "10DE:27B2", "nvidia.com/AD104GL_RTX_4000_ADA_GENERATION"
    ),
}


def permitted_host_devices() -> dict[str, list[dict[str, Any]]]:
    """What the platform admins put in the KubeVirt CR's
    `spec.configuration.permittedHostDevices` so VMs may claim the GPUs (the NVIDIA sandbox
    device plugin advertises them, hence `externalResourceProvider`)."""
    return {
        "pciHostDevices": [
            {
                "pciVendorSelector": device.pci_vendor_selector,
                "resourceName": device.resource_name,
                "externalResourceProvider": True,
            }
            for device in PASSTHROUGH_DEVICES.values()
        ]
    }
