"""The node lifecycle: every allowed move works and is audited; every illegal move is refused."""

import itertools

import pytest
from django.utils import timezone

from core.errors import InvalidTransition
from core.models import AuditEvent
from inventory.errors import ReasonRequired
from inventory.models import GPU, TRANSITIONS, HealthEvent, Node, NodeState, NodeValidation
from inventory.services import lifecycle
from tests.factories import GPUFactory, NodeFactory

ILLEGAL = [
    (source, target)
    for source, target in itertools.product(NodeState, NodeState)
    if target not in TRANSITIONS[source]
]


def _audits(node: Node) -> int:
    return AuditEvent.objects.filter(object_type="inventory.node", object_id=str(node.pk)).count()


@pytest.mark.django_db
@pytest.mark.parametrize(("source", "target"), ILLEGAL, ids=[f"{s}->{t}" for s, t in ILLEGAL])
def test_every_illegal_move_is_refused_and_changes_nothing(source, target):
    # Retirement facts recorded, so that only the state machine itself can refuse the move.
    node = NodeFactory(state=source, disks_wiped_at=timezone.now(), bmc_reset_at=timezone.now())

    with pytest.raises(InvalidTransition):
        lifecycle.node_transition(node_id=node.pk, target=target, actor=None, reason="try it")

    node.refresh_from_db()
    assert node.state == source
    assert _audits(node) == 0


@pytest.mark.django_db
def test_the_whole_lifecycle_is_walked_and_each_move_audited_with_actor_and_reason(
    platform_admin, django_capture_on_commit_callbacks
):
    node = NodeFactory(state=NodeState.DISCOVERED)

    def move(target: str, reason: str) -> None:
        lifecycle.node_transition(node_id=node.pk, target=target, actor=platform_admin,
                                  reason=reason)

    with django_capture_on_commit_callbacks(execute=False):
        move(NodeState.VALIDATING, "racked and cabled")
        for kind in (NodeValidation.Kind.BURN_IN, NodeValidation.Kind.NCCL):
            lifecycle.node_validation_record(node_id=node.pk, actor=platform_admin, kind=kind,
                                             passed=True, summary="ok")
        move(NodeState.AVAILABLE, "burn-in and NCCL passed")
        move(NodeState.CORDONED, "fan noise")
        move(NodeState.AVAILABLE, "false alarm")
        move(NodeState.CORDONED, "XID 79")
        lifecycle.node_transition(node_id=node.pk, target=NodeState.DRAINING,
                                  actor=platform_admin, reason="XID 79")
        lifecycle.node_drain_complete(node_id=node.pk, health_event_id=None, namespaces=[])
        lifecycle.node_retirement_record(node_id=node.pk, actor=platform_admin,
                                         disks_wiped=True, bmc_reset=True, note="RMA")
        move(NodeState.RETIRED, "end of life")

    node.refresh_from_db()
    assert node.state == NodeState.RETIRED
    moves = AuditEvent.objects.filter(action="node.transition", object_id=str(node.pk))
    path = [(e.changes["from"], e.changes["to"]) for e in moves.order_by("id")]
    assert path == [
        ("discovered", "validating"),
        ("validating", "available"),
        ("available", "cordoned"),
        ("cordoned", "available"),
        ("available", "cordoned"),
        ("cordoned", "draining"),
        ("draining", "maintenance"),
        ("maintenance", "retired"),
    ]
    assert moves.filter(actor=platform_admin).count() == 7  # the drain's end is the system's
    assert moves.get(changes__to="cordoned", changes__reason="fan noise").actor_repr == (
        "platform-admin"
    )


@pytest.mark.django_db
def test_a_node_becomes_available_only_after_passing_burn_in_and_nccl(platform_admin):
    node = NodeFactory(state=NodeState.DISCOVERED)
    lifecycle.node_transition(node_id=node.pk, target=NodeState.VALIDATING, actor=None,
                              reason="new")

    with pytest.raises(InvalidTransition, match="no Burn-in result"):
        lifecycle.node_transition(node_id=node.pk, target=NodeState.AVAILABLE, actor=None,
                                  reason="go")
    lifecycle.node_validation_record(node_id=node.pk, actor=platform_admin, kind="burn-in",
                                     passed=True)
    lifecycle.node_validation_record(node_id=node.pk, actor=platform_admin, kind="nccl",
                                     passed=False, summary="busbw 120 GB/s < 350",
                                     metrics={"busbw_gbps": 120})
    with pytest.raises(InvalidTransition, match="last NCCL all-reduce result failed"):
        lifecycle.node_transition(node_id=node.pk, target=NodeState.AVAILABLE, actor=None,
                                  reason="go")

    lifecycle.node_validation_record(node_id=node.pk, actor=platform_admin, kind="nccl",
                                     passed=True, metrics={"busbw_gbps": 380})
    lifecycle.node_transition(node_id=node.pk, target=NodeState.AVAILABLE, actor=None,
                              reason="passed")
    node.refresh_from_db()
    assert node.state == NodeState.AVAILABLE
    assert NodeValidation.objects.filter(node=node).count() == 3


@pytest.mark.django_db
def test_a_node_retires_only_with_disks_wiped_and_bmc_reset_recorded():
    node = NodeFactory(state=NodeState.MAINTENANCE)

    with pytest.raises(InvalidTransition, match="disks wiped and BMC reset"):
        lifecycle.node_transition(node_id=node.pk, target=NodeState.RETIRED, actor=None,
                                  reason="old")
    lifecycle.node_retirement_record(node_id=node.pk, actor=None, disks_wiped=True,
                                     bmc_reset=False)
    with pytest.raises(InvalidTransition, match="BMC reset"):
        lifecycle.node_transition(node_id=node.pk, target=NodeState.RETIRED, actor=None,
                                  reason="old")
    lifecycle.node_retirement_record(node_id=node.pk, actor=None, disks_wiped=False,
                                     bmc_reset=True)
    lifecycle.node_transition(node_id=node.pk, target=NodeState.RETIRED, actor=None,
                              reason="old")

    node.refresh_from_db()
    assert node.state == NodeState.RETIRED
    assert node.disks_wiped_at and node.bmc_reset_at


@pytest.mark.django_db
def test_a_move_without_a_reason_is_refused():
    node = NodeFactory(state=NodeState.AVAILABLE)
    with pytest.raises(ReasonRequired):
        lifecycle.node_cordon(node_id=node.pk, actor=None, reason="  ")
    node.refresh_from_db()
    assert node.state == NodeState.AVAILABLE


@pytest.mark.django_db
def test_a_move_another_worker_made_first_is_refused():
    node = NodeFactory(state=NodeState.AVAILABLE)
    stale = Node.objects.get(pk=node.pk)
    Node.objects.filter(pk=node.pk).update(state=NodeState.CORDONED)  # the other worker won

    with pytest.raises(InvalidTransition, match="someone else moved it first"):
        lifecycle._move(stale, target=NodeState.CORDONED, actor=None, reason="me too")


@pytest.mark.django_db
def test_returning_to_service_closes_open_health_events_and_heals_gpus(platform_admin):
    node = NodeFactory(state=NodeState.MAINTENANCE)
    gpu = GPUFactory(node=node, index=0, health=GPU.Health.FAILED)
    HealthEvent.objects.create(node=node, gpu=gpu, kind="xid", subject="gpu:0",
                               severity="critical", detail="XID 79")

    lifecycle.node_return_to_service(node_id=node.pk, actor=platform_admin, reason="GPU swapped")

    node.refresh_from_db()
    gpu.refresh_from_db()
    assert node.state == NodeState.AVAILABLE
    assert gpu.health == GPU.Health.HEALTHY
    event = HealthEvent.objects.get(node=node)
    assert event.resolved_at is not None and event.resolved_by == platform_admin
    assert "GPU swapped" in event.resolution


@pytest.mark.django_db
def test_uncordon_only_moves_a_cordoned_node():
    node = NodeFactory(state=NodeState.MAINTENANCE)
    with pytest.raises(InvalidTransition):
        lifecycle.node_uncordon(node_id=node.pk, actor=None, reason="please")
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE
