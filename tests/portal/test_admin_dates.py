"""Django admin writes dates and times as the portal does: ISO-like, on a 24-hour clock."""

import datetime
import re

import pytest
from django.urls import reverse

from core.models import AuditEvent
from tenants.models import QuotaRequest


@pytest.mark.django_db
def test_admin_lists_and_forms_show_iso_dates_on_a_24_hour_clock(login, platform_admin, tenant,
                                                                  tenant_member):
    moment = datetime.datetime(2026, 11, 3, 14, 5, tzinfo=datetime.UTC)
    request = QuotaRequest.objects.create(tenant=tenant, requested_by=tenant_member,
                                          justification="More.", created_at=moment,
                                          ends_on=datetime.date(2026, 12, 31))
    AuditEvent.objects.create(action="quota_request.submit", created_at=moment)
    client = login(platform_admin)

    # The review queue shows a request's age and the date its quota ends; the audit trail when.
    queue = client.get(reverse("admin:tenants_quotarequest_changelist")).content.decode()
    trail = client.get(reverse("admin:portal_auditevent_changelist")).content.decode()
    assert "2026-12-31" in queue and "2026-11-03 14:05" in trail
    for listing in (queue, trail):
        assert not re.search(r"\b[ap]\.m\.|\bmidnight\b|\bnoon\b|Nov\. 3", listing)

    review = client.get(
        reverse("admin:tenants_quotarequest_change", args=[request.pk])
    ).content.decode()
    assert "2026-11-03 14:05" in review
    assert not re.search(r"\b[ap]\.m\.|\bmidnight\b|Nov\. 3", review)
