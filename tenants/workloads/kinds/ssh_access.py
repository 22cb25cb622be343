"""SSH from a laptop to VMs and Slurm login nodes: a LoadBalancer Service per machine.

Why a Service per machine and not a shared SSH bastion: SSH carries no hostname a proxy could
route on (no SNI), so a shared entry point needs either a port per machine on the Gateway (a
TCPRoute per listener, at most 64 listeners on a Gateway) or a bastion host with accounts and
keys for every tenant's people — one more machine holding everyone's access, reaching into every
tenant's namespace past its NetworkPolicy. A LoadBalancer Service gives each machine its own
address from the fleet's pool (MetalLB, or the cloud's load balancer), with the tenant's own key
as the only credential, and nothing shared between tenants. `externalTrafficPolicy: Local` keeps
the client's address, so the source ranges hold in both the Service and the NetworkPolicy.

The tenant's NetworkPolicy admits TCP 22 from `SSH_SOURCE_RANGES` (tenants.enforcement).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import ExternalAccess

SSH_PORT = 22
ANYWHERE = frozenset({"0.0.0.0/0", "::/0"})


def service_spec(access: ExternalAccess) -> dict[str, Any]:
    """The ServiceSpec fields that publish port 22 on an address of the fleet's pool."""
    spec: dict[str, Any] = {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}
    if not ANYWHERE.issuperset(access.ssh_sources):
        spec["loadBalancerSourceRanges"] = list(access.ssh_sources)
    return spec


def external_address(service: Mapping[str, Any] | None) -> str:
    """The address the load balancer gave the Service ("" while it has none)."""
    ingress = (((service or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress")
    for entry in ingress or []:
        if isinstance(entry, Mapping) and (entry.get("ip") or entry.get("hostname")):
            return str(entry.get("ip") or entry.get("hostname"))
    return ""


def waiting_note(service: str) -> str:
    return (f"The Service {service} has no external address yet: the fleet's load balancer "
            "(e.g. MetalLB) gives it one from its pool.")


def ssh_command(user: str, address: str) -> str:
    return f"ssh {user}@{address}"
