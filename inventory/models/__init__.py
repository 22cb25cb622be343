"""What the fleet is and how healthy it is: sites, racks, nodes, GPUs, NICs, health events."""

from .device import GPU, NIC
from .health import HealthEvent, InventoryRun, Severity
from .node import (
    NODE_STATE_COLORS,
    TRANSITIONS,
    BiosProfile,
    Node,
    NodeState,
    NodeValidation,
)
from .site import Rack, Site

__all__ = [
    "GPU",
    "NIC",
    "NODE_STATE_COLORS",
    "TRANSITIONS",
    "BiosProfile",
    "HealthEvent",
    "InventoryRun",
    "Node",
    "NodeState",
    "NodeValidation",
    "Rack",
    "Severity",
    "Site",
]
