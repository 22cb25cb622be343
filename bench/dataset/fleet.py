"""The inventory: sites, racks, nodes, GPUs, NICs and health events."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from decimal import Decimal

from inventory import resource_classes
from inventory.models import GPU, NIC, HealthEvent, Node, NodeState, Rack, Site

from .copying import TableWriter
from .plan import (
    GPUS_PER_NODE,
    NODE_PLAN,
    NODES_PER_RACK,
    SITE_COUNT,
    SITES,
)


class FleetTables(TableWriter):

    def sites_and_racks(self) -> int:
        self.rack_count = max(SITE_COUNT, -(-self.sizes.nodes // NODES_PER_RACK))
        self._copy(Site, ({"id": i + 1, "slug": slug, "name": name, "region": region}
                          for i, (slug, name, region) in enumerate(SITES)))
        self.rack_site = {r + 1: r % SITE_COUNT + 1 for r in range(self.rack_count)}
        return SITE_COUNT + self._copy(Rack, (
            {"id": r, "site_id": site, "name": f"r{(r - 1) // SITE_COUNT + 1:03d}",
             "row": f"row-{(r - 1) // (SITE_COUNT * 10) + 1}"}
            for r, site in self.rack_site.items()
        ))

    def _node_model(self, n: int) -> tuple[str, int, int, Decimal]:
        position = (n * 0.6180339887) % 1.0  # spread the models evenly over the racks
        for model, share, cores, memory, price in NODE_PLAN:
            if position < share:
                return model, cores, memory, price
            position -= share
        model, _, cores, memory, price = NODE_PLAN[-1]
        return model, cores, memory, price

    def nodes(self) -> int:
        rng = self.rng
        self.node_models: dict[int, str] = {}
        self.node_hostnames: dict[int, str] = {}
        rows = []
        for n in range(self.sizes.nodes):
            node_id = n + 1
            model_key, cores, memory, _ = self._node_model(n)
            model = resource_classes.GPU_MODELS[model_key]
            rack = n // NODES_PER_RACK + 1
            site_slug = SITES[self.rack_site[rack] - 1][0]
            hostname = f"gpu-{site_slug}-{node_id:04d}"
            roll = rng.random()
            state = (NodeState.AVAILABLE if roll < 0.9 else NodeState.CORDONED if roll < 0.94
                     else NodeState.MAINTENANCE if roll < 0.97 else NodeState.DRAINING
                     if roll < 0.98 else NodeState.VALIDATING)
            mig = model.mig_capable and n % 7 == 0
            self.node_models[node_id] = model_key
            self.node_hostnames[node_id] = hostname
            rows.append({
                "id": node_id, "hostname": hostname, "k8s_name": hostname,
                "serial": f"SN{uuid.uuid5(self.namespace, hostname).hex[:12].upper()}",
                "bmc_address": f"10.{self.rack_site[rack]}.{n // 250}.{n % 250 + 1}",
                "rack_id": rack, "position": 1 + 4 * (n % NODES_PER_RACK), "height_units": 4,
                "role": Node.Role.GPU_WORKER, "state": state,
                "state_changed_at": self.anchor - datetime.timedelta(days=rng.randint(1, 300)),
                "cpu_cores": cores, "memory_gib": memory,
                "k8s_last_seen_at": self.anchor, "k8s_ready": state != NodeState.MAINTENANCE,
                "k8s_unschedulable": state != NodeState.AVAILABLE,
                "k8s_labels": {
                    resource_classes.GPU_PRODUCT_LABEL: model.product_label,
                    "nvidia.com/gpu.count": str(GPUS_PER_NODE),
                    "topology.kubernetes.io/zone": site_slug,
                },
                "k8s_capacity": {"cpu": str(cores), "memory": f"{memory}Gi",
                                 resource_classes.GPU_RESOURCE: str(GPUS_PER_NODE)},
                "k8s_conditions": [{"type": "Ready", "status": "True"}],
                "gpus_in_use": rng.randint(0, GPUS_PER_NODE),
                "gpu_sharing": "mig" if mig else "whole",
                # A model's own smallest profile (an H200 has no 1g.10gb).
                "mig_in_use": {model.mig_profiles[0]: rng.randint(0, 7)} if mig else {},
                "created_at": self.anchor - datetime.timedelta(days=400 - n % 300),
            })
        self.mig_nodes = {row["id"] for row in rows if row["gpu_sharing"] == "mig"}
        return self._copy(Node, rows)

    def gpus(self) -> int:
        def rows() -> Iterator[dict]:
            for node_id, model_key in self.node_models.items():
                model = resource_classes.GPU_MODELS[model_key]
                hostname = self.node_hostnames[node_id]
                for index in range(GPUS_PER_NODE):
                    gpu_id = (node_id - 1) * GPUS_PER_NODE + index + 1
                    yield {
                        "id": gpu_id, "node_id": node_id, "index": index,
                        "uuid": f"GPU-{uuid.uuid5(self.namespace, f'{hostname}/{index}')}",
                        "model": model_key, "memory_gib": model.memory_gib,
                        "pci_bus_id": f"0000:{0x18 + index * 0x10:02x}:00.0",
                        "mig_capable": model.mig_capable,
                        "mig_layout": ([model.mig_profiles[0]] * 7
                                       if node_id in self.mig_nodes else []),
                        "health": "degraded" if gpu_id % 997 == 0 else "healthy",
                        "nvlink_domain": f"nvl-{hostname}", "numa_node": index // 4,
                    }
        return self._copy(GPU, rows())

    def nics(self) -> int:
        def rows() -> Iterator[dict]:
            for node_id in self.node_models:
                yield {"id": 2 * node_id - 1, "node_id": node_id, "name": "eno1",
                       "kind": "ethernet", "mac_address": f"02:00:00:{node_id >> 8 & 255:02x}:"
                       f"{node_id & 255:02x}:01", "link_speed_gbps": 100, "fabric": "storage"}
                yield {"id": 2 * node_id, "node_id": node_id, "name": "mlx5_0",
                       "kind": "infiniband", "ib_guid": f"0002:c903:00{node_id >> 8 & 255:02x}:"
                       f"{node_id & 255:02x}00", "link_speed_gbps": 400,
                       "fabric": "ib-compute", "rail": 0}
        return self._copy(NIC, rows())

    def health_events(self) -> int:
        rng = self.rng
        rows = []
        kinds = [k for k, _ in HealthEvent.Kind.choices if k != "manual"]
        nodes = list(self.node_models)
        for e in range(self.sizes.health_events):
            node_id = nodes[(e * 7919) % len(nodes)]
            opened = self.anchor - datetime.timedelta(hours=rng.randint(1, 24 * 180))
            # One open event per node at most (the constraint); the rest are resolved.
            still_open = e < len(nodes) and e % 5 == 0
            rows.append({
                "id": e + 1, "node_id": node_id,
                "gpu_id": (node_id - 1) * GPUS_PER_NODE + e % GPUS_PER_NODE + 1,
                "kind": kinds[e % len(kinds)], "subject": f"gpu{e % GPUS_PER_NODE}",
                "severity": ("info", "warning", "critical")[e % 3], "source": "dcgm",
                "value": float(e % 100), "detail": "Seen by the DCGM exporter.",
                "opened_at": opened, "last_seen_at": opened + datetime.timedelta(minutes=30),
                "resolved_at": None if still_open else opened + datetime.timedelta(hours=2),
                "resolution": "" if still_open else "GPU reset; counters cleared.",
                "notified_tenants": [],
            })
        return self._copy(HealthEvent, rows)

