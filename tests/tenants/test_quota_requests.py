"""Asking for quota, deciding on it, and temporary grants running out (services)."""

import datetime

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from core.models import AuditEvent
from tenants.models import Quota, QuotaRequest, Tenant
from tenants.quota import services as quota_requests
from tests.factories import MembershipFactory, UserFactory

S = QuotaRequest.Status
TOMORROW = timezone.localdate() + datetime.timedelta(days=1)


def _errors(exc: pytest.ExceptionInfo) -> dict:
    return exc.value.message_dict if hasattr(exc.value, "error_dict") else {}


def test_member_submits_a_request_with_lines_and_the_admins_are_told(
    submit, tenant, tenant_member, platform_admin, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        request = submit({"gpu:nvidia-h200": 8, "cpu": 64}, ends_on=TOMORROW)
    assert request.status == S.SUBMITTED and request.requested_by == tenant_member
    assert {(line.resource, line.amount) for line in request.lines.all()} == {
        ("gpu:nvidia-h200", 8),
        ("cpu", 64),
    }
    event = AuditEvent.objects.get(action="quota_request.submit")
    assert event.tenant_slug == "acme" and event.changes["lines"]["gpu:nvidia-h200"] == 8
    (mail,) = mailoutbox
    assert mail.to == ["platform-admin@example.com"]
    assert f"#{request.pk}" in mail.subject and "Fine-tune a 70B model." in mail.body


@pytest.mark.parametrize(
    ("lines", "field"),
    [
        ({"gpu:nvidia-h200": 0}, "amount"),
        ({"gpu:nvidia-h200": -4}, "amount"),
        ({"gpu:nvidia-h200": 10**9}, "amount"),
        ({"cpu": 10**7}, "amount"),
        ({"gpu:nvidia-b300": 8}, "resource"),
        ({"mig:nvidia-a100-80gb:9g.99gb": 2}, "resource"),
        ({"mig:nvidia-l40s:1g.10gb": 2}, "resource"),
        ({"bananas": 2}, "resource"),
    ],
    ids=[
        "zero",
        "negative",
        "absurd-gpus",
        "absurd-cpu",
        "unknown-model",
        "unknown-profile",
        "no-mig-on-l40s",
        "nonsense",
    ],
)
def test_bad_lines_are_field_errors_and_nothing_is_stored(submit, lines, field):
    with pytest.raises(ValidationError) as refused:
        submit(lines)
    assert list(_errors(refused)) == [f"lines.0.{field}"]
    assert not QuotaRequest.objects.exists()


def test_end_date_in_the_past_or_today_and_empty_justification_are_field_errors(submit):
    for ends_on in (timezone.localdate(), timezone.localdate() - datetime.timedelta(days=3)):
        with pytest.raises(ValidationError) as refused:
            submit(ends_on=ends_on, justification="  ")
        assert set(_errors(refused)) == {"ends_on", "justification"}
    assert not QuotaRequest.objects.exists()


def test_dedicated_tenant_cannot_ask_for_mig_partitions(submit, tenant):
    Tenant.objects.filter(pk=tenant.pk).update(isolation=Tenant.Isolation.DEDICATED)
    tenant.refresh_from_db()
    with pytest.raises(ValidationError) as refused:
        submit({"mig:nvidia-a100-80gb:1g.10gb": 7})
    assert "trust domain" in str(_errors(refused)["lines.0.resource"])


def test_the_same_resource_twice_is_refused(tenant, tenant_member):
    with pytest.raises(ValidationError) as refused:
        quota_requests.quota_request_create(
            tenant=tenant,
            requested_by=tenant_member,
            lines=[{"resource": "cpu", "amount": 2}, {"resource": "cpu", "amount": 4}],
            justification="x",
        )
    assert "twice" in str(_errors(refused)["lines"])


def test_viewers_and_outsiders_cannot_ask(submit, tenant_viewer, other_tenant_member):
    for user in (tenant_viewer, other_tenant_member):
        with pytest.raises(PermissionDenied):
            submit(by=user)
    assert not QuotaRequest.objects.exists()


def test_approval_raises_the_quota_audits_and_mails_requester_and_owners(
    submit,
    granted,
    tenant_owner,
    tenant_member,
    platform_admin,
    mailoutbox,
    django_capture_on_commit_callbacks,
    simulated_gateway,
):
    request = submit({"gpu:nvidia-h100-80gb": 8, "memory-gib": 512})
    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        quota_requests.quota_request_approve(
            request_id=request.pk, approver=platform_admin, note="Enjoy."
        )
    request.refresh_from_db()
    # The reconcile ran after commit and the simulated cluster accepted it.
    assert request.status == S.APPLIED and request.applied_at is not None
    assert request.decided_by == platform_admin and request.decision_note == "Enjoy."
    limits = dict(Quota.objects.filter(tenant=request.tenant).values_list("resource", "limit"))
    assert limits == {"gpu:nvidia-h100-80gb": 16, "cpu": 64, "memory-gib": 512}
    line = request.lines.get(resource="gpu:nvidia-h100-80gb")
    assert (line.approved_amount, line.limit_before, line.limit_after) == (8, 8, 16)
    event = AuditEvent.objects.get(action="quota_request.approve")
    assert event.actor == platform_admin
    assert event.changes["lines"]["gpu:nvidia-h100-80gb"]["limit"] == [8, 16]
    approved = next(m for m in mailoutbox if "approved" in m.subject)
    assert set(approved.to) == {"owner@example.com", "member@example.com"}
    assert "Enjoy." in approved.body
    assert any("enforced on the cluster" in m.subject for m in mailoutbox)


def test_approval_with_changed_amounts_grants_what_the_admin_decided(
    submit, platform_admin, django_capture_on_commit_callbacks
):
    request = submit({"gpu:nvidia-h100-80gb": 8, "cpu": 64})
    quota_requests.quota_request_approve(
        request_id=request.pk,
        approver=platform_admin,
        amounts={"gpu:nvidia-h100-80gb": 4},
        note="Half now.",
    )
    limits = dict(Quota.objects.values_list("resource", "limit"))
    assert limits == {"gpu:nvidia-h100-80gb": 4, "cpu": 64}
    assert AuditEvent.objects.filter(action="quota_request.approve_changed").exists()


@pytest.mark.parametrize(
    "amounts",
    [
        {"gpu:nvidia-h100-80gb": -1},
        {"cpu": 5},
        {"gpu:nvidia-h100-80gb": 0},
        {"gpu:nvidia-h100-80gb": 10**8},
    ],
    ids=["negative", "not-in-request", "nothing", "absurd"],
)
def test_approval_with_bad_amounts_is_refused_and_changes_nothing(submit, platform_admin, amounts):
    request = submit({"gpu:nvidia-h100-80gb": 8})
    with pytest.raises(ValidationError) as refused:
        quota_requests.quota_request_approve(
            request_id=request.pk, approver=platform_admin, amounts=amounts
        )
    assert "amounts" in _errors(refused)
    request.refresh_from_db()
    assert request.status == S.SUBMITTED and not Quota.objects.exists()


def test_only_platform_admins_decide(submit, tenant_owner, finance):
    request = submit()
    for user in (tenant_owner, finance):
        with pytest.raises(PermissionDenied):
            quota_requests.quota_request_approve(request_id=request.pk, approver=user)
        with pytest.raises(PermissionDenied):
            quota_requests.quota_request_reject(request_id=request.pk, approver=user, reason="x")
    request.refresh_from_db()
    assert request.status == S.SUBMITTED and not Quota.objects.exists()


def test_rejection_needs_a_reason_which_is_mailed(
    submit, tenant_owner, platform_admin, mailoutbox, django_capture_on_commit_callbacks
):
    request = submit()
    with pytest.raises(ValidationError) as refused:
        quota_requests.quota_request_reject(
            request_id=request.pk, approver=platform_admin, reason=" "
        )
    assert "reason" in _errors(refused)
    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        quota_requests.quota_request_reject(
            request_id=request.pk, approver=platform_admin, reason="The H100s are all taken."
        )
    request.refresh_from_db()
    assert request.status == S.REJECTED and request.decision_note == "The H100s are all taken."
    (mail,) = mailoutbox
    assert "rejected" in mail.subject and "The H100s are all taken." in mail.body
    assert set(mail.to) == {"owner@example.com", "member@example.com"}
    assert AuditEvent.objects.filter(action="quota_request.reject", actor=platform_admin).exists()
    assert not Quota.objects.exists()


def test_requester_or_owner_withdraws_but_another_member_cannot(submit, tenant, tenant_owner):
    colleague = MembershipFactory(tenant=tenant, user=UserFactory(username="colleague")).user
    request = submit()
    with pytest.raises(PermissionDenied):
        quota_requests.quota_request_withdraw(request_id=request.pk, actor=colleague)
    quota_requests.quota_request_withdraw(request_id=request.pk, actor=tenant_owner)
    assert QuotaRequest.objects.get(pk=request.pk).status == S.WITHDRAWN
    assert AuditEvent.objects.filter(action="quota_request.withdraw").count() == 1


def test_temporary_grant_is_reminded_once_then_taken_back_after_its_end_date(
    submit,
    granted,
    platform_admin,
    mailoutbox,
    django_capture_on_commit_callbacks,
    simulated_gateway,
):
    ends_on = timezone.localdate() + datetime.timedelta(days=3)
    request = submit({"gpu:nvidia-h100-80gb": 4}, ends_on=ends_on)
    with django_capture_on_commit_callbacks(execute=True):
        quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
    assert Quota.objects.get(resource="gpu:nvidia-h100-80gb").limit == 12
    mailoutbox.clear()

    far = ends_on - datetime.timedelta(days=30)
    assert quota_requests.quota_grants_remind(today=far) == []
    with django_capture_on_commit_callbacks(execute=True):
        assert quota_requests.quota_grants_remind() == [request.pk]
    assert quota_requests.quota_grants_remind() == []  # once
    (reminder,) = mailoutbox
    assert "ends on" in reminder.subject and ends_on.isoformat() in reminder.body

    assert quota_requests.quota_grants_end_due(today=ends_on) == []  # still its last day
    with django_capture_on_commit_callbacks(execute=True):
        ended = quota_requests.quota_grants_end_due(today=ends_on + datetime.timedelta(days=1))
    assert ended == [request.pk]
    request.refresh_from_db()
    assert request.status == S.EXPIRED and request.ended_at is not None
    assert Quota.objects.get(resource="gpu:nvidia-h100-80gb").limit == 8
    assert AuditEvent.objects.get(action="quota_request.ended").changes["lines"] == {
        "gpu:nvidia-h100-80gb": {"limit": [12, 8]}
    }
    # The cluster follows: the reduced quota is applied.
    request.tenant.refresh_from_db()
    assert request.tenant.applied_version == request.tenant.desired_version
    assert any("has ended" in m.subject for m in mailoutbox)


def test_ending_a_grant_never_takes_the_quota_below_zero(submit, platform_admin):
    request = submit({"cpu": 16}, ends_on=TOMORROW)
    quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
    QuotaRequest.objects.filter(pk=request.pk).update(status=S.APPLIED)
    Quota.objects.filter(resource="cpu").update(limit=4)  # an admin lowered it meanwhile
    quota_requests.quota_grants_end_due(today=TOMORROW + datetime.timedelta(days=1))
    assert Quota.objects.get(resource="cpu").limit == 0


def test_a_request_whose_end_date_passed_while_waiting_is_not_granted(submit, platform_admin):
    request = submit({"cpu": 16}, ends_on=TOMORROW)
    QuotaRequest.objects.filter(pk=request.pk).update(
        ends_on=timezone.localdate() - datetime.timedelta(days=1)
    )
    with pytest.raises(ValidationError) as refused:
        quota_requests.quota_request_approve(request_id=request.pk, approver=platform_admin)
    assert "ends_on" in _errors(refused)
    request.refresh_from_db()
    assert request.status == S.SUBMITTED and not Quota.objects.exists()
