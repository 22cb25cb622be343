"""What a platform admin sees on Django admin's review queue and tenant list: rows, filters,
actions, links that keep the filters, pagination, and a sidebar that shows each page's own
filters whatever page the worker served before."""

import datetime
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from tenants.models import QuotaRequest, Tenant
from tests.factories import MembershipFactory, TenantFactory

QUEUE = reverse("admin:tenants_quotarequest_changelist")
TENANTS = reverse("admin:tenants_tenant_changelist")


@pytest.fixture
def admin_client(login, platform_admin):
    return login(platform_admin)


def _sidebar(html: str) -> str:
    return re.search(r'<nav id="changelist-filter".*?</nav>', html, re.S).group(0)


def _filter(html: str, title: str) -> str:
    return re.search(
        rf'<details data-filter-title="{title}".*?</details>', _sidebar(html), re.S
    ).group(0)


def _selected(block: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", item).strip()
        for item in re.findall(r'<li class="selected">(.*?)</li>', block, re.S)
    ]


def _cells(html: str, pk: int) -> dict[str, str]:
    """The row of request (or tenant) `pk`: each cell's text by its column's class."""
    row = re.search(rf"<tr>(?:(?!</tr>).)*?/{pk}/change/.*?</tr>", html, re.S).group(0)
    return {
        name: " ".join(re.sub(r"<[^>]+>", " ", text).split())
        for name, text in re.findall(r'<t[hd] class="field-([\w]+)[^"]*">(.*?)</t[hd]>', row, re.S)
    }


def test_the_sidebar_shows_this_pages_filters_not_the_last_pages(admin_client, submit):
    """Two statuses chosen, then one: the second page's sidebar selects "approved" alone and
    carries no "submitted" in any hidden field (a cache keyed on the last value of a repeated
    parameter once served the first page's sidebar)."""
    submit({"cpu": 8})
    both = admin_client.get(QUEUE + "?status__exact=submitted&status__exact=approved")
    assert both.status_code == 200
    first = both.content.decode()
    assert sorted(_selected(_filter(first, "status"))) == ["Approved, applying", "Submitted"]
    assert '<input type="hidden" name="status__exact" value="submitted">' in _sidebar(first)

    page = admin_client.get(QUEUE + "?status__exact=approved").content.decode()

    assert _selected(_filter(page, "status")) == ["Approved, applying"]
    hidden = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', _sidebar(page))
    assert ("status__exact", "approved") in hidden
    assert all(value != "submitted" for _, value in hidden)
    assert not re.search(r'type="hidden"[^>]*value="submitted"', page)


def test_each_filter_shows_its_own_choice_on_its_own_page(admin_client, submit):
    submit({"cpu": 8})
    for query, title, shown in [
        ("?resource=cpu", "resource", ["vCPU"]),
        ("?age=week", "age", ["1 to 7 days"]),
        ("?status__exact=rejected&age=day", "age", ["Under a day"]),
        ("", "age", ["All"]),
    ]:
        html = admin_client.get(QUEUE + query).content.decode()
        assert _selected(_filter(html, title)) == shown, query


def test_a_status_filter_on_two_models_lists_each_models_statuses(admin_client):
    admin_client.get(TENANTS)
    html = admin_client.get(QUEUE).content.decode()
    assert "?status__exact=submitted" in html and "?status__exact=suspended" not in html
    html = admin_client.get(TENANTS).content.decode()
    assert "?status__exact=suspended" in html and "?status__exact=submitted" not in html


def test_a_queue_row_shows_what_was_asked_by_whom_and_when(admin_client, submit, tenant_member):
    odd = TenantFactory(slug="odd-lab", name='Odd <b>"Lab"</b> & Co')
    asker = MembershipFactory(tenant=odd, role="owner").user
    request = submit({"gpu:nvidia-h100-80gb": 8, "cpu": 1200}, target=odd, by=asker,
                     ends_on=timezone.localdate() + datetime.timedelta(days=30))
    QuotaRequest.objects.filter(pk=request.pk).update(
        created_at=timezone.now() - datetime.timedelta(days=3)
    )

    html = admin_client.get(QUEUE).content.decode()
    cells = _cells(html, request.pk)

    assert cells["number"] == f"#{request.pk}"
    assert cells["tenant_name"] == "Odd &lt;b&gt;&quot;Lab&quot;&lt;/b&gt; &amp; Co"  # not markup
    assert cells["asked"] == "+8 NVIDIA H100 80GB HBM3 GPUs, +1,200 vCPU"
    assert cells["status_badge"] == "Submitted"
    assert cells["requester"] == asker.username
    assert cells["age"] == "3 d"
    assert cells["ends_on"] == (timezone.localdate() + datetime.timedelta(days=30)).isoformat()
    assert (f'aria-label="Select this object for an action - Quota request #{request.pk}"'
            in html)


def test_a_row_links_to_its_review_page_keeping_the_filters(admin_client, submit):
    request = submit({"cpu": 8})

    html = admin_client.get(QUEUE + "?status__exact=submitted&o=-2").content.decode()

    link = re.search(rf'<a href="([^"]+)">#{request.pk}</a>', html).group(1)
    assert link == (f"/admin/tenants/quotarequest/{request.pk}/change/"
                    "?_changelist_filters=status__exact%3Dsubmitted%26o%3D-2")
    review = admin_client.get(link.replace("&amp;", "&")).content.decode()
    # The review page's way back is the list as it was filtered.
    assert 'href="/admin/tenants/quotarequest/?status__exact=submitted&amp;o=-2"' in review


def test_the_queue_offers_its_two_decisions_and_no_delete(admin_client, submit):
    submit({"cpu": 8})
    html = admin_client.get(QUEUE).content.decode()
    actions = re.findall(r'<option value="(\w*)"', re.search(
        r'<select name="action".*?</select>', html, re.S).group(0))
    assert actions == ["", "approve_selected", "reject_selected"]


def test_a_popup_of_the_queue_hands_each_rows_pk_back(admin_client, submit):
    first, second = submit({"cpu": 8}), submit({"cpu": 16})
    html = admin_client.get(QUEUE + "?_popup=1&_to_field=id").content.decode()
    for request in (first, second):
        assert f'data-popup-opener="{request.pk}"' in html


def test_a_tenant_row_shows_its_cluster_state_and_escapes_its_name(admin_client):
    tenant = TenantFactory(slug="plain-lab", name="Plain <Lab>", cost_center="CC-9",
                           cohort="research")
    Tenant.objects.filter(pk=tenant.pk).update(reconcile_error="quota rejected: <forbidden>")

    html = admin_client.get(TENANTS).content.decode()
    cells = _cells(html, tenant.pk)

    assert "Plain &lt;Lab&gt;" in html
    assert cells["slug"] == "plain-lab" and cells["cost_center"] == "CC-9"
    assert cells["cohort"] == "research"
    assert cells["cluster"] == "Failing on the cluster, retrying quota rejected: &lt;forbidden&gt;"


def test_the_tenant_list_pages_keep_the_filters_and_offer_show_all(admin_client):
    TenantFactory.create_batch(120, name="Some lab")
    html = admin_client.get(TENANTS + "?status__exact=active").content.decode()
    pages = re.search(r'<p class="paginator">.*?</p>', html, re.S).group(0)

    assert 'href="?p=2&amp;status__exact=active"' in pages
    assert 'href="?p=3&amp;status__exact=active"' in pages
    assert "120 tenants" in pages
    assert 'href="?all=&amp;status__exact=active"' in pages

    third = admin_client.get(TENANTS + "?status__exact=active&p=3").content.decode()
    assert len(re.findall(r'<a href="/admin/tenants/tenant/\d+/change/', third)) == 20
    assert 'aria-current="page">3<' in third or '<span class="this-page">3</span>' in third
