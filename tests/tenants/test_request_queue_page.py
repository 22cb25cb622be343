"""The platform admins' review queue (/requests/): a page at a time at fleet scale (400 waiting),
every row as it was, the waiting count once for the page and the navigation's badge."""

import datetime
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tenants.models import QuotaRequest
from tenants.quota.models import QuotaRequestLine
from tests.factories import TenantFactory, UserFactory

pytestmark = pytest.mark.django_db

S = QuotaRequest.Status
QUEUE = "/requests/"


def _waiting(n: int, *, tenant=None, status=S.SUBMITTED) -> list[QuotaRequest]:
    """`n` requests, oldest first one minute apart, each asking for 8 vCPUs and 2 H200s."""
    tenant = tenant or TenantFactory(slug="helix", name="Helix Research")
    who = UserFactory(username="asker", first_name="Ada", last_name="Lovelace")
    start = timezone.now() - datetime.timedelta(days=3)
    requests = QuotaRequest.objects.bulk_create(
        QuotaRequest(
            tenant=tenant,
            requested_by=who,
            justification="More.",
            status=status,
            created_at=start + datetime.timedelta(minutes=i),
        )
        for i in range(n)
    )
    QuotaRequestLine.objects.bulk_create(
        QuotaRequestLine(request=r, resource=resource, amount=amount)
        for r in requests
        for resource, amount in (("cpu", 8), ("gpu:nvidia-h200", 2))
    )
    return requests


def _rows(html: str) -> list[int]:
    return [int(n) for n in re.findall(r"<td>#(\d+)</td>", html)]


def test_the_queue_shows_each_request_as_before(login, platform_admin, submit):
    request = submit(
        {"gpu:nvidia-h100-80gb": 4, "cpu": 1000},
        ends_on=timezone.localdate() + datetime.timedelta(days=30),
    )
    html = login(platform_admin).get(QUEUE).content.decode()
    row = re.search(rf"<td>#{request.pk}</td>.*?</tr>", html, re.S).group(0)
    assert "Acme Labs" in row and ">shared<" in row
    assert "<div>+4 NVIDIA H100 80GB HBM3 GPUs</div><div>+1,000 vCPU</div>" in row
    who = request.requested_by.get_full_name()
    assert f'0\xa0minutes ago<div class="text-muted">{who}<' in row
    assert (timezone.localdate() + datetime.timedelta(days=30)).isoformat() in row
    assert f'href="/admin/tenants/quotarequest/{request.pk}/change/"' in row
    assert re.search(r'id="waiting-count">1<', html)


def test_who_asked_is_their_name_else_their_username_else_a_dash(login, platform_admin):
    first, second = _waiting(2)
    QuotaRequest.objects.filter(pk=first.pk).update(
        requested_by=UserFactory(username="nameless", first_name="", last_name="")
    )
    QuotaRequest.objects.filter(pk=second.pk).update(requested_by=None)
    html = login(platform_admin).get(QUEUE).content.decode()
    assert 'ago<div class="text-muted">nameless</div>' in html
    assert 'ago<div class="text-muted">—</div>' in html


def test_the_queue_shows_fifty_oldest_first_and_pages_through_the_rest(login, platform_admin):
    requests = _waiting(120)
    client = login(platform_admin)
    html = client.get(QUEUE).content.decode()
    assert _rows(html) == [r.pk for r in requests[:50]]
    assert re.search(r'id="waiting-count">120<', html)
    assert "1\u201350 of 120, oldest first" in html
    assert "3\xa0days ago" in html and "Ada Lovelace" in html
    assert 'href="?page=2"' in html  # the default size is not repeated in links
    html = client.get(QUEUE, {"page": 3}).content.decode()
    assert _rows(html) == [r.pk for r in requests[100:]]
    assert "101\u2013120 of 120" in html and 'href="?page=2"' in html


@pytest.mark.parametrize(
    ("asked", "shown"), [("400", 400), ("1000", 400), ("75", 75), ("x", 50), ("0", 1)]
)
def test_page_size_is_asked_for_and_capped_at_400(login, platform_admin, asked, shown):
    _waiting(450)
    html = login(platform_admin).get(QUEUE, {"page_size": asked}).content.decode()
    assert len(_rows(html)) == shown
    if shown not in (50, 450):
        assert f"page_size={shown}" in html  # the next page keeps the size


def test_the_queue_makes_the_same_queries_with_one_count_at_any_size(login, platform_admin):
    client = login(platform_admin)
    _waiting(3)
    _waiting(1, tenant=TenantFactory(slug="nova"), status=S.APPROVED)
    client.get(QUEUE)  # warm-up
    with CaptureQueriesContext(connection) as few:
        client.get(QUEUE, {"page_size": 400})
    _waiting(60, tenant=TenantFactory(slug="orbit"))
    _waiting(5, tenant=TenantFactory(slug="pulsar"), status=S.FAILED)
    with CaptureQueriesContext(connection) as more:
        html = client.get(QUEUE, {"page_size": 400}).content.decode()
    assert len(_rows(html)) == 63
    assert len(more.captured_queries) == len(few.captured_queries)
    counts = [q["sql"] for q in more.captured_queries if "COUNT(" in q["sql"]]
    assert len(counts) == 1  # the queue's total is the navigation's badge
    assert re.search(r'id="nav-badge-requests">63<', html)


def test_requests_on_the_way_are_listed_and_bounded(login, platform_admin):
    approved = _waiting(52, status=S.APPROVED)
    QuotaRequest.objects.filter(pk=approved[0].pk).update(
        status=S.FAILED, last_error="quota webhook refused", attempts=3
    )
    html = login(platform_admin).get(QUEUE).content.decode()
    applying = html[html.index('id="applying"') :]
    first = reverse("admin:tenants_quotarequest_change", args=[approved[0].pk])
    assert f'href="{first}"' in applying
    assert "quota webhook refused</span> (attempt 3)" in applying
    assert len(re.findall(r'<a href="/admin/tenants/quotarequest/\d+/change/">#', applying)) == 50
    assert 'id="more-applying"' in applying and "?status__exact=approved" in applying
