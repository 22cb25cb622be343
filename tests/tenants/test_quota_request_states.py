"""The quota request's state machine: only the listed moves, and one winner per race."""

import threading

import pytest
from django.db import close_old_connections, connection, transaction

from core.models import AuditEvent
from core.state_machine import InvalidTransition
from tenants.models import Quota, QuotaRequest
from tenants.quota import services as quota_requests

S = QuotaRequest.Status
ALLOWED = {
    (source, target) for source, targets in QuotaRequest.TRANSITIONS.items() for target in targets
}
ILLEGAL = sorted((a, b) for a in S.values for b in S.values if (a, b) not in ALLOWED)


def test_transitions_cover_every_state_and_terminal_states_go_nowhere():
    assert set(QuotaRequest.TRANSITIONS) == set(S.values)
    for terminal in (S.REJECTED, S.WITHDRAWN, S.EXPIRED):
        assert QuotaRequest.TRANSITIONS[terminal] == frozenset()
    assert {
        (S.SUBMITTED, S.APPROVED),
        (S.SUBMITTED, S.REJECTED),
        (S.SUBMITTED, S.WITHDRAWN),
        (S.APPROVED, S.APPLIED),
        (S.APPROVED, S.FAILED),
        (S.FAILED, S.APPLIED),
        (S.APPLIED, S.EXPIRED),
    } == ALLOWED


@pytest.mark.parametrize(("source", "target"), ILLEGAL, ids=lambda v: str(v))
def test_every_illegal_transition_is_refused_and_changes_nothing(submit, source, target):
    request = submit()
    QuotaRequest.objects.filter(pk=request.pk).update(status=source)
    request.refresh_from_db()
    with pytest.raises(InvalidTransition):
        request.move_to(target)
    request.refresh_from_db()
    assert request.status == source


@pytest.mark.parametrize(("source", "target"), sorted(ALLOWED), ids=lambda v: str(v))
def test_every_listed_transition_is_made(submit, source, target):
    request = submit()
    QuotaRequest.objects.filter(pk=request.pk).update(status=source)
    request.refresh_from_db()
    request.move_to(target)
    request.refresh_from_db()
    assert request.status == target


def test_a_stale_copy_cannot_move_a_request_someone_else_moved(submit):
    request = submit()
    stale = QuotaRequest.objects.get(pk=request.pk)
    request.move_to(S.WITHDRAWN)
    with pytest.raises(InvalidTransition) as refused:
        stale.move_to(S.APPROVED)  # allowed from 'submitted', but it no longer is
    assert refused.value.raced
    assert QuotaRequest.objects.get(pk=request.pk).status == S.WITHDRAWN


def test_deciding_twice_is_refused(submit, platform_admin):
    request = submit()
    quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
    with pytest.raises(InvalidTransition):
        quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
    with pytest.raises(InvalidTransition):
        quota_requests.quota_request_reject(
            request_id=request.pk, approver=platform_admin, reason="late"
        )
    assert Quota.objects.get(resource="gpu:nvidia-h100-80gb").limit == 8


@pytest.mark.django_db(transaction=True)
def test_concurrent_approvals_of_one_request_cannot_both_win(submit, platform_admin):
    """Two admins approve the same request on two database connections at the same moment.

    The first holds its transaction open after its conditional UPDATE; the second, having read
    'submitted' before that commit, blocks on the row and then finds it no longer 'submitted'.
    """
    assert connection.vendor == "postgresql"
    request = submit({"gpu:nvidia-h100-80gb": 8})
    first_updated, release = threading.Event(), threading.Event()
    outcomes: dict[str, object] = {}

    def first():
        try:
            with transaction.atomic():
                quota_requests.quota_request_approve(
                    request_id=request.pk, approver=platform_admin, note="first"
                )
                first_updated.set()
                release.wait(timeout=10)
            outcomes["first"] = "approved"
        except Exception as exc:  # pragma: no cover - reported below
            outcomes["first"] = exc
        finally:
            close_old_connections()
            connection.close()

    def second():
        first_updated.wait(timeout=10)
        try:
            quota_requests.quota_request_approve(
                request_id=request.pk, approver=platform_admin, note="second"
            )
            outcomes["second"] = "approved"
        except InvalidTransition as exc:
            outcomes["second"] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_updated.wait(timeout=10)
    threads[1].join(timeout=0.5)
    assert threads[1].is_alive(), "the second approval should wait on the first one's row lock"
    release.set()
    for thread in threads:
        thread.join(timeout=15)

    assert outcomes["first"] == "approved"
    assert isinstance(outcomes["second"], InvalidTransition) and outcomes["second"].raced
    request.refresh_from_db()
    # The winner's reconcile ran after its commit (eager Celery, simulated fleet).
    assert request.status == S.APPLIED and request.decision_note == "first"
    assert Quota.objects.get(tenant=request.tenant, resource="gpu:nvidia-h100-80gb").limit == 8
    approvals = AuditEvent.objects.filter(action__startswith="quota_request.approve")
    assert approvals.count() == 1
