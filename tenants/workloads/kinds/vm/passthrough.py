"""Whole GPUs passed through to KubeVirt VMs: the extended resource each GPU model is
advertised as on a node in passthrough mode, and what the platform admins permit in the
`KubeVirt` CR so that VMs may claim them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory import resource_classes


@dataclass(frozen=True)
class PassthroughDevice:
    """A GPU model as the NVIDIA sandbox device plugin advertises it for PCI passthrough: the
    extended resource is its PCI-database name, upper-cased, spaces and brackets as `_`."""

    pci_vendor_selector: str  # vendor:device, as KubeVirt's pciHostDevices want it
    resource_name: str


# One row per model of `inventory.resource_classes.GPU_MODELS` (the SXM variants for the models
# that come in several): check a node with `kubectl describe node | grep nvidia.com/`. The
# resource names are the vocabulary's (`resource_classes.PASSTHROUGH_RESOURCES`): Kueue's
# ClusterQueue covers them too.
_PCI_VENDOR_SELECTORS = {
    "nvidia-h200": "10DE:2335",
    "nvidia-h100-80gb": "10DE:2330",
    "nvidia-a100-80gb": "10DE:20B2",
    "nvidia-l40s": "10DE:26B9",
    "nvidia-rtx-4000-ada": "10DE:27B2",
}
PASSTHROUGH_DEVICES: dict[str, PassthroughDevice] = {
    key: PassthroughDevice(selector, resource_classes.PASSTHROUGH_RESOURCES[key])
    for key, selector in _PCI_VENDOR_SELECTORS.items()
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
