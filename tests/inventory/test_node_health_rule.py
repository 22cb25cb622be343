"""Node health is one rule (`node_health`), read by the list, the detail page, the rack view
and the health filter alike: critical with an open critical event or a failed GPU, degraded
with an open warning or a degraded GPU, healthy otherwise."""

import pytest
from django.utils import timezone

from inventory.filters import NodeFilterSet
from inventory.models import GPU, HealthEvent
from inventory.selectors.nodes import node_get_for_detail, nodes_for_list, rack_get_with_elevation
from tests.factories import GPUFactory, NodeFactory

# name → (GPU healths, open event severities, resolved event severities), expected health
CASES = {
    "bare": (((), (), ()), "healthy"),
    "fine": ((("healthy", "healthy"), (), ()), "healthy"),
    "info": ((("healthy",), ("info",), ()), "healthy"),
    "resolved": ((("healthy",), (), ("critical", "warning")), "healthy"),
    "warned": ((("healthy",), ("warning",), ()), "degraded"),
    "worn": ((("healthy", "degraded"), (), ()), "degraded"),
    "worn-resolved": ((("degraded",), (), ("critical",)), "degraded"),
    "alarmed": ((("healthy",), ("critical",), ()), "critical"),
    "broken": ((("degraded", "failed"), ("warning",), ()), "critical"),
    "both": ((("failed",), ("critical", "warning"), ()), "critical"),
}


@pytest.fixture
def nodes(db):
    made = {}
    for name, ((gpus, open_, resolved), _) in CASES.items():
        node = NodeFactory(hostname=name)
        for index, health in enumerate(gpus):
            GPUFactory(node=node, index=index, health=health)
        for n, severity in enumerate(open_ + resolved):
            HealthEvent.objects.create(
                node=node, kind=HealthEvent.Kind.choices[0][0], subject=f"gpu{n}",
                severity=severity,
                resolved_at=timezone.now() if n >= len(open_) else None,
            )
        made[name] = node
    return made


def test_each_page_reads_the_same_health_from_the_one_rule(nodes):
    expected = {name: health for name, (_, health) in CASES.items()}
    assert {n.hostname: n.health for n in nodes_for_list()} == expected
    for name, node in nodes.items():
        detail = node_get_for_detail(node_id=node.pk)
        assert detail.health == expected[name], name
        assert detail.open_events == len(CASES[name][0][1])
        assert detail.gpu_count == len(CASES[name][0][0]) == len(detail.gpus.all())
        _, slots = rack_get_with_elevation(rack_id=node.rack_id)
        assert {s.node.health for s in slots if s.node} == {expected[name]}
    for health in ("healthy", "degraded", "critical"):
        chosen = NodeFilterSet({"health": health}, queryset=nodes_for_list()).qs
        assert {n.hostname for n in chosen} == {k for k, v in expected.items() if v == health}


def test_a_failed_gpu_makes_its_node_critical_until_it_is_healthy_again(nodes):
    GPU.objects.filter(node=nodes["fine"], index=0).update(health=GPU.Health.FAILED)
    assert nodes_for_list().get(hostname="fine").health == "critical"
    GPU.objects.filter(node=nodes["fine"]).update(health=GPU.Health.HEALTHY)
    assert nodes_for_list().get(hostname="fine").health == "healthy"
