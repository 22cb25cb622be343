"""The review queue's rows (/requests/) as platform admins see them, hostile names escaped."""

import datetime

import pytest
from django.utils import timezone

from tenants.models import QuotaRequest
from tenants.quota.models import QuotaRequestLine
from tests.factories import TenantFactory, UserFactory

pytestmark = pytest.mark.django_db
QUEUE = "/requests/"


def _section(html: str, section_id: str) -> str:
    part = html[html.index(f'id="{section_id}"'):]
    return part[: part.index("</table>")]


def test_every_kind_of_waiting_row_shows_its_values_escaped(login, platform_admin):
    odd = TenantFactory(slug="odd", name="<script>alert(1)</script> & Co", isolation="shared")
    named = UserFactory(username="ada", first_name="Ada <i>", last_name="Lovelace")
    bare = UserFactory(username="x&y", first_name="", last_name="")
    now = timezone.now()
    asks = [
        (named, None, [("cpu", 1000), ("gpu:nvidia-h200", 2)]),
        (bare, now.date() + datetime.timedelta(days=30), [("mem:<odd>&", 3)]),
        (None, None, []),
    ]
    created = []
    for i, (who, ends_on, lines) in enumerate(asks):
        request = QuotaRequest.objects.create(
            tenant=odd, requested_by=who, justification="More.", ends_on=ends_on,
            status=QuotaRequest.Status.SUBMITTED)
        QuotaRequest.objects.filter(pk=request.pk).update(
            created_at=now - datetime.timedelta(days=3 - i, minutes=7))
        QuotaRequestLine.objects.bulk_create(
            QuotaRequestLine(request=request, resource=resource, amount=amount)
            for resource, amount in lines)
        created.append(request)

    html = login(platform_admin).get(QUEUE).content.decode()
    waiting = _section(html, "waiting")

    assert "<script>" not in html and "<odd>" not in html
    assert waiting.count("&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co") == 3
    assert "<div>+1,000 vCPU</div><div>+2 " in waiting
    assert "<div>+3 mem:&lt;odd&gt;&amp;</div>" in waiting
    assert '<div class="text-muted">Ada &lt;i&gt; Lovelace</div>' in waiting
    assert '<div class="text-muted">x&amp;y</div>' in waiting
    assert 'ago<div class="text-muted">—</div>' in waiting
    assert "3\xa0days" in waiting
    until = now.date() + datetime.timedelta(days=30)
    assert f'<td class="small">{until:%Y-%m-%d}</td>' in waiting
    for request in created:
        assert f'href="/admin/tenants/quotarequest/{request.pk}/change/">Review</a>' in waiting


def test_every_kind_of_row_on_the_way_shows_its_values_escaped(login, platform_admin):
    odd = TenantFactory(slug="odd", name="<script>x</script>")
    plain = TenantFactory(slug="plain", name="Plain")
    rows = {}
    for name, tenant, status, error, attempts in [
        ("approved", odd, QuotaRequest.Status.APPROVED, "", 0),
        ("long", plain, QuotaRequest.Status.FAILED, 'quota "x" <refused> & more ' * 9, 3),
        ("applied", plain, QuotaRequest.Status.APPLIED, "", 1),  # applied: not on the way
    ]:
        rows[name] = QuotaRequest.objects.create(tenant=tenant, justification="More.",
                                                 status=status, last_error=error,
                                                 attempts=attempts)

    applying = _section(login(platform_admin).get(QUEUE).content.decode(), "applying")

    assert "<script>" not in applying and "&lt;script&gt;x&lt;/script&gt;" in applying
    assert f'>#{rows["approved"].pk}</a>' in applying and "applying…" in applying
    assert 'data-status="approved">' in applying and 'data-status="failed">' in applying
    assert "&lt;refused&gt; &amp; more" in applying and "…</span> (attempt 3)" in applying
    assert f'>#{rows["applied"].pk}</a>' not in applying
