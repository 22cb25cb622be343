"""What the fleet is and how healthy it is: sites, racks, nodes, GPUs, NICs, health events."""

from .device import GPU, NIC
from .health import HealthEvent, InventoryRun, Severity
from .node import (
    TRANSITIONS,
    BiosProfile,
    GpuSharing,
    Node,
    NodeState,
    NodeValidation,
)
from .site import Rack, Site

__all__ = [
    "GPU",
    "NIC",
    "TRANSITIONS",
    "BiosProfile",
    "GpuSharing",
    "HealthEvent",
    "InventoryRun",
    "Node",
    "NodeState",
    "NodeValidation",
    "Rack",
    "Severity",
    "Site",
]
