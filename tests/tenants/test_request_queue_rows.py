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
