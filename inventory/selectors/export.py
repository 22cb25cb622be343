"""The inventory as import-compatible records (see `inventory.transfer` for the columns)."""

from typing import Any

from django.db.models import Prefetch

from ..models import GPU, NIC, Node


def _node_record(node: Node) -> dict[str, Any]:
    return {
        "name": node.hostname,
        "k8s_name": node.k8s_name,
        "serial": node.serial or "",
        "site": node.rack.site.slug if node.rack else "",
        "rack": node.rack.name if node.rack else "",
        "position": node.position,
        "u_height": node.height_units,
        "role": node.role,
        "status": node.state,
        "bmc_address": node.bmc_address or "",
        "bios_profile": node.bios_profile,
        "tenant": node.reserved_for,
        "cpu_cores": node.cpu_cores,
        "memory_gib": node.memory_gib,
    }


def _gpu_record(gpu: GPU, hostname: str) -> dict[str, Any]:
    return {
        "device": hostname,
        "index": gpu.index,
        "model": gpu.model,
        "uuid": gpu.uuid or "",
        "serial": gpu.serial or "",
        "memory_gib": gpu.memory_gib,
        "pci_bus_id": gpu.pci_bus_id,
        "mig_capable": gpu.mig_capable,
        "mig_layout": gpu.mig_layout,
        "ecc_enabled": gpu.ecc_enabled,
        "numa_node": gpu.numa_node,
        "nvlink_domain": gpu.nvlink_domain,
        "health": gpu.health,
    }


def _nic_record(nic: NIC, hostname: str) -> dict[str, Any]:
    return {
        "device": hostname,
        "name": nic.name,
        "type": nic.kind,
        "mac_address": nic.mac_address or "",
        "ib_guid": nic.ib_guid or "",
        "speed_gbps": nic.link_speed_gbps,
        "fabric": nic.fabric,
        "numa_node": nic.numa_node,
        "rail": nic.rail,
    }


def _nodes():
    return Node.objects.select_related("rack__site").prefetch_related(
        Prefetch("gpus", queryset=GPU.objects.order_by("index")),
        Prefetch("nics", queryset=NIC.objects.order_by("name")),
    ).order_by("hostname")


def inventory_export_records(*, objects: str) -> list[dict[str, Any]]:
    """Flat records of one object type, for CSV (three queries)."""
    records: list[dict[str, Any]] = []
    for node in _nodes():
        if objects == "nodes":
            records.append(_node_record(node))
        elif objects == "gpus":
            records += [_gpu_record(gpu, node.hostname) for gpu in node.gpus.all()]
        else:
            records += [_nic_record(nic, node.hostname) for nic in node.nics.all()]
    return records


def inventory_export_nested() -> list[dict[str, Any]]:
    """Nodes with their GPUs and NICs nested, for JSON (three queries)."""
    nested = []
    for node in _nodes():
        record = _node_record(node)
        record["gpus"] = [
            {k: v for k, v in _gpu_record(g, node.hostname).items() if k != "device"}
            for g in node.gpus.all()
        ]
        record["nics"] = [
            {k: v for k, v in _nic_record(n, node.hostname).items() if k != "device"}
            for n in node.nics.all()
        ]
        nested.append(record)
    return nested
