"""A quota decision reaches the tenant's webhooks once, from the decision itself."""

import pytest

from tenants.quota import services as quota_requests
from tests.support.webhooks import hook_for, owed

pytestmark = pytest.mark.django_db


def test_approval_and_rejection_are_each_told_once(submit, tenant, platform_admin):
    hook_for(tenant, url="https://hooks.example.com/acme", events=["quota_request.decided"])
    first, second = submit(), submit({"cpu": 4})
    assert owed("quota_request.decided") == []  # asking is not deciding
    quota_requests.quota_request_approve(request_id=first.pk, approver=platform_admin,
                                         note="Enjoy.")
    quota_requests.quota_request_reject(request_id=second.pk, approver=platform_admin,
                                        reason="No CPUs left.")
    approved, rejected = (p["data"]["quota_request"] for p in owed("quota_request.decided"))
    assert (approved["id"], approved["status"], approved["note"]) == (first.pk, "approved",
                                                                       "Enjoy.")
    assert approved["lines"] == [{"resource": "gpu:nvidia-h100-80gb", "asked": 8, "granted": 8}]
    assert approved["decided_by"] == "platform-admin"
    assert (rejected["status"], rejected["note"]) == ("rejected", "No CPUs left.")
