"""The admin review of a decided request shows the decision and what it did, as recorded when it
was decided, never a recomputed "what approving would do" on today's quota."""

import re

import pytest
from django.urls import reverse

from inventory import resource_classes
from tenants.models import QuotaRequest, QuotaRequestLine
from tenants.quota import services as quota_requests

H100 = "gpu:nvidia-h100-80gb"
H100_LABEL = f"{resource_classes.parse(H100).label} {H100}"


def _review(client, request) -> str:
    response = client.get(reverse("admin:tenants_quotarequest_change", args=[request.pk]))
    assert response.status_code == 200
    return response.content.decode()


def _text(html: str, pattern: str) -> str:
    found = re.search(pattern, html, re.S)
    assert found, pattern
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(0)).split())


def _effect(html: str) -> list[list[str]]:
    table = re.search(r'<table id="decision-effect">.*?</table>', html, re.S).group(0)
    return [
        [
            " ".join(re.sub(r"<[^>]+>", " ", c).split())
            for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
        ]
        for r in re.findall(r"<tr data-resource.*?</tr>", table, re.S)
    ]


@pytest.fixture
def admin_client(login, platform_admin):
    return login(platform_admin)


def test_an_approved_request_shows_who_decided_and_the_quota_it_made_not_a_new_preview(
    admin_client, submit, granted, platform_admin, tenant
):
    request = submit({H100: 4, "cpu": 32})
    quota_requests.quota_request_approve(
        request_id=request.pk, approver=platform_admin, amounts={H100: 2}, note="Half for now."
    )
    # Later the quota moves on: the record of this decision must not.
    quota_requests.quota_set(actor=platform_admin, tenant=tenant, resource=H100, limit=40)

    html = _review(admin_client, request)

    assert "What approving would do" not in html and 'name="_approve"' not in html
    assert 'id="review-lines"' not in html
    decision = _text(html, r'<div class="module decision-record".*?</p>')
    assert decision.startswith("Approved on ")
    assert "(platform-admin)" in decision and "Note: Half for now." in decision
    assert _effect(html) == [
        [H100_LABEL, "+4", "+2", "8", "10"],
        ["vCPU cpu", "+32", "+32", "64", "96"],
    ]


def test_a_rejected_request_records_the_quota_it_left_unchanged(
    admin_client, submit, granted, platform_admin, tenant
):
    request = submit({H100: 4})
    quota_requests.quota_request_reject(
        request_id=request.pk, approver=platform_admin, reason="No H100s left."
    )
    line = QuotaRequestLine.objects.get(request=request)
    assert (line.limit_before, line.limit_after) == (8, 8)
    quota_requests.quota_set(actor=platform_admin, tenant=tenant, resource=H100, limit=40)

    html = _review(admin_client, request)

    assert "What approving would do" not in html
    decision = _text(html, r'<div class="module decision-record".*?</p>')
    assert decision.startswith("Rejected on ") and "Reason: No H100s left." in decision
    assert _effect(html) == [[H100_LABEL, "+4", "+0", "8", "8"]]


def test_a_withdrawn_request_says_who_withdrew_it_and_when(
    admin_client, submit, granted, tenant_member
):
    request = submit({H100: 4})
    quota_requests.quota_request_withdraw(request_id=request.pk, actor=tenant_member)

    html = _review(admin_client, request)

    decision = _text(html, r'<div class="module decision-record".*?</p>')
    assert re.match(r"Withdrawn on \d{4}-\d\d-\d\d \d\d:\d\d UTC by member\.", decision)
    assert _effect(html) == [[H100_LABEL, "+4", "+0", "8", "8"]]


def test_a_decision_recorded_before_the_quota_was_kept_says_so(
    admin_client, submit, platform_admin
):
    request = submit({H100: 4})
    quota_requests.quota_request_reject(request_id=request.pk, approver=platform_admin, reason="no")
    QuotaRequestLine.objects.filter(request=request).update(limit_before=None, limit_after=None)

    html = _review(admin_client, request)

    assert _effect(html) == [[H100_LABEL, "+4", "+0", "not recorded"]]
    assert QuotaRequest.objects.get(pk=request.pk).status == QuotaRequest.Status.REJECTED
