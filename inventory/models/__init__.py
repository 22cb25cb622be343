"""What the fleet is and how healthy it is: sites, racks, nodes, GPUs, NICs, health events."""

from .cluster import DEFAULT_CLUSTER, Cluster, ClusterState
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
    "DEFAULT_CLUSTER",
    "GPU",
    "NIC",
    "TRANSITIONS",
    "BiosProfile",
    "Cluster",
    "ClusterState",
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
