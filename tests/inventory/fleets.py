"""Build fleets of any size quickly (bulk inserts), for pages, APIs and query-count tests."""

from inventory.models import GPU, NIC, HealthEvent, Node, NodeState, Rack, Site

STATES = [NodeState.AVAILABLE] * 6 + [NodeState.CORDONED, NodeState.MAINTENANCE]
MODELS = [("nvidia-h100-80gb", 80), ("nvidia-a100-80gb", 80), ("nvidia-l40s", 48)]


def _tag(prefix: str) -> int:
    return sum(ord(c) for c in prefix) & 0xFFFF


def build_fleet(nodes: int, *, prefix: str = "gpu", reserved_every: int = 10) -> list[Node]:
    """`nodes` nodes of 8 GPUs and 2 NICs each in 40-node racks, some cordoned, reserved,
    degraded or with open health events."""
    site, _ = Site.objects.get_or_create(slug="bulk1", defaults={"name": "Bulk 1"})
    racks = Rack.objects.bulk_create(
        Rack(site=site, name=f"{prefix}-r{i:03d}") for i in range((nodes + 39) // 40)
    )
    created = Node.objects.bulk_create(
        Node(
            hostname=f"{prefix}-{i:05d}",
            k8s_name=f"{prefix}-{i:05d}",
            serial=f"{prefix.upper()}-SN-{i:06d}",
            rack=racks[i // 40],
            position=1 + i % 40,
            state=STATES[i % len(STATES)],
            cpu_cores=128,
            memory_gib=1024,
            reserved_for="helix" if i % reserved_every == 0 else "",
        )
        for i in range(nodes)
    )
    GPU.objects.bulk_create(
        GPU(
            node=node,
            index=g,
            uuid=f"GPU-{i:08x}-{g:04x}-0000-0000-{_tag(prefix):012x}",
            model=MODELS[i % len(MODELS)][0],
            memory_gib=MODELS[i % len(MODELS)][1],
            numa_node=g // 4,
            health=GPU.Health.DEGRADED if (i % 13 == 0 and g == 0) else GPU.Health.HEALTHY,
        )
        for i, node in enumerate(created)
        for g in range(8)
    )
    NIC.objects.bulk_create(
        NIC(node=node, name=f"mlx5_{n}", kind=NIC.Kind.INFINIBAND,
            ib_guid=f"{i:04x}:{n:04x}:{_tag(prefix):04x}:0001", rail=n)
        for i, node in enumerate(created)
        for n in range(2)
    )
    HealthEvent.objects.bulk_create(
        HealthEvent(node=node, kind="xid", subject="gpu:1", severity="critical",
                    detail="XID 79")
        for i, node in enumerate(created)
        if i % 17 == 0
    )
    return created
