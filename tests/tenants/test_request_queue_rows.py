"""The review queue's rows (/requests/) are written in Python as the template wrote them."""

import datetime

import pytest
from django.template import Context, Template
from django.utils import timezone

from portal.display import grouped, iso_date, time_since
from portal.paging import url_maker
from tenants.models import QuotaRequest
from tenants.quota.models import QuotaRequestLine, resource_label
from tenants.quota.selectors import quota_requests_waiting
from tenants.quota.views import _queue_rows
from tests.factories import TenantFactory, UserFactory

pytestmark = pytest.mark.django_db

# The row of templates/tenants/requests.html before it was written in Python, with the cells
# the view worked out for it.
TEMPLATE_ROW = Template(
    """<tr>
<td>#{{ r.pk }}</td>
<td>{{ r.tenant }} <span class="badge text-bg-light border">{{ r.isolation }}</span></td>
<td class="small">{% for line in r.asked %}<div>{{ line }}</div>{% endfor %}</td>
<td class="small">{{ r.ago }} ago<div class="text-muted">{{ r.who }}</div></td>
<td class="small">{{ r.until }}</td>
<td class="text-end"><a class="btn btn-sm btn-outline-primary" href="{{ r.review_url }}">Review</a></td>
</tr>"""  # noqa: E501
)


def _cells(row: dict, review_url, ago) -> dict:
    who = " ".join(n for n in (row["requested_by__first_name"], row["requested_by__last_name"])
                   if n)
    return {
        "pk": row["id"],
        "tenant": row["tenant__name"],
        "isolation": row["tenant__isolation"],
        "asked": [f"+{grouped(n)} {resource_label(resource)}"
                  for resource, n in zip(row["line_resources"], row["line_amounts"], strict=True)],
        "ago": ago(row["created_at"]),
        "who": who or row["requested_by__username"] or "—",
        "until": iso_date(row["ends_on"]) or "—",
        "review_url": review_url(row["id"]),
    }


def test_every_kind_of_row_is_what_the_template_wrote():
    odd = TenantFactory(slug="odd", name='Nova <b>&</b> "Co"')
    named = UserFactory(username="ada", first_name="Ada <i>", last_name="Lovelace")
    bare = UserFactory(username="x&y", first_name="", last_name="")
    now = timezone.now()
    asks = [
        (odd, named, None, [("cpu", 1000), ("gpu:nvidia-h200", 2)]),
        (odd, bare, now.date() + datetime.timedelta(days=30), [("mem:<odd>&", 3)]),
        (odd, None, None, []),
    ]
    for i, (tenant, who, ends_on, lines) in enumerate(asks):
        request = QuotaRequest.objects.create(
            tenant=tenant, requested_by=who, justification="More.", ends_on=ends_on,
            status=QuotaRequest.Status.SUBMITTED)
        QuotaRequest.objects.filter(pk=request.pk).update(
            created_at=now - datetime.timedelta(days=i, minutes=7))
        QuotaRequestLine.objects.bulk_create(
            QuotaRequestLine(request=request, resource=resource, amount=amount)
            for resource, amount in lines)
    rows = list(quota_requests_waiting())
    review_url = url_maker("admin:tenants_quotarequest_change", "pk")
    ago = time_since(timezone.now())

    written = _queue_rows(rows, review_url)

    assert len(written) == 3
    for row, html in zip(rows, written, strict=True):
        expected = TEMPLATE_ROW.render(Context({"r": _cells(row, review_url, ago)}))
        assert html == expected, row["id"]
    assert "Nova &lt;b&gt;&amp;&lt;/b&gt; &quot;Co&quot;" in written[0]


# A row of the queue's "on the way" table before it was written in Python.
TEMPLATE_ON_THE_WAY = Template(
    """<tr><td><a href="{{ r.review_url }}">#{{ r.pk }}</a></td><td>{{ r.tenant.name }}</td><td>{% include "tenants/_request_status.html" %}</td><td class="small">{% if r.last_error %}<span class="text-danger">{{ r.last_error|truncatechars:120 }}</span> (attempt {{ r.attempts }}){% else %}applying…{% endif %}</td></tr>"""  # noqa: E501
)


def test_every_kind_of_row_on_the_way_is_what_the_template_wrote():
    from tenants.quota.selectors import quota_requests_on_the_way
    from tenants.quota.views import _on_the_way_rows

    odd = TenantFactory(slug="odd", name='Nova <b>&</b> "Co"')
    plain = TenantFactory(slug="plain", name="Plain")
    for tenant, status, error, attempts in [
        (odd, QuotaRequest.Status.APPROVED, "", 0),
        (plain, QuotaRequest.Status.FAILED, 'quota "x" <refused> & more ' * 9, 3),
        (plain, QuotaRequest.Status.FAILED, "short", 1),
        (plain, QuotaRequest.Status.APPLIED, "", 1),  # applied: not on the way
    ]:
        QuotaRequest.objects.create(tenant=tenant, justification="More.", status=status,
                                    last_error=error, attempts=attempts)
    review_url = url_maker("admin:tenants_quotarequest_change", "pk")

    written = _on_the_way_rows(list(quota_requests_on_the_way()), review_url)

    requests = list(QuotaRequest.objects.exclude(status="applied").select_related("tenant")
                    .order_by("created_at", "id"))
    assert len(written) == len(requests) == 3
    for request, html in zip(requests, written, strict=True):
        request.review_url = review_url(request.pk)
        assert html == TEMPLATE_ON_THE_WAY.render(Context({"r": request})), request.pk
    assert "Nova &lt;b&gt;&amp;&lt;/b&gt; &quot;Co&quot;" in written[0]
    assert "…</span> (attempt 3)" in written[1]
