"""The admin review form in a real browser: Enter in an amount recalculates, never decides."""

import pytest

from tenants.models import QuotaRequest
from tenants.quota import services as quota_requests
from tests.factories import TEST_PASSWORD, QuotaFactory
from tests.support.fixtures_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_enter_in_an_amount_recalculates_and_approves_nothing(
    page, tenant, tenant_member, platform_admin
):
    QuotaFactory(tenant=tenant, resource="gpu:nvidia-h100-80gb", limit=8)
    request = quota_requests.quota_request_create(
        tenant=tenant, requested_by=tenant_member, justification="More replicas.",
        lines=[{"resource": "gpu:nvidia-h100-80gb", "amount": 4}],
    )
    sign_in(page, "platform-admin", TEST_PASSWORD)
    page.goto(f"/admin/tenants/quotarequest/{request.pk}/change/")

    amount = f"#id_amount_{request.lines.get().pk}"
    page.fill(amount, "2")
    with page.expect_navigation():
        page.press(amount, "Enter")

    request.refresh_from_db()
    assert request.status == QuotaRequest.Status.SUBMITTED
    assert page.locator("#review-status").get_attribute("data-status") == "submitted"
    assert page.input_value(amount) == "2"  # recalculated with the amount typed
