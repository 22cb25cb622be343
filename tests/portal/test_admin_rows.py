"""Admin changelists whose rows are planned per column (portal.admin_rows) render exactly the
HTML Django's own row code renders, cell for cell, with the page's filters kept in each link."""

import datetime
import re

import pytest
from django.contrib import admin
from django.contrib.admin import AdminSite
from django.contrib.admin.helpers import ActionForm
from django.contrib.admin.templatetags.admin_list import admin_list_filter, results
from django.contrib.auth import get_user_model
from django.template import Context, Template
from django.template.loader import get_template
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.formats import localize

from portal import admin_rows
from portal.admin_rows import PlannedActionForm, _Dates, changelist_rows, result_list_html
from portal.templatetags.portal_admin import planned_list_filter
from tenants.access.admin import TenantAdmin
from tenants.models import QuotaRequest, QuotaRequestLine, Tenant
from tenants.quota import admin as quota_admin
from tenants.quota import services as quota_requests
from tenants.quota.admin import _queue_rows
from tests.factories import MembershipFactory, TenantFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(login, platform_admin):
    return login(platform_admin)


def as_html(row) -> str:
    return "".join(str(cell) for cell in row)


def _both(client, url: str) -> tuple[list[str], list[str]]:
    """The page's rows as portal.admin_rows renders them and as Django's results() does."""
    response = client.get(url)
    assert response.status_code == 200
    cl = response.context["cl"]
    planned = [as_html(row) for row in changelist_rows(cl)]
    django = [as_html(row) for row in results(cl)]
    assert planned  # the page has rows to compare
    # What the page served is the planned rows.
    page = response.content.decode()
    assert all(row in page for row in planned)
    return planned, django


def _requests(tenant, member):
    odd = TenantFactory(slug="odd-lab", name='Odd <b>"Lab"</b> & Co')
    outsider = MembershipFactory(tenant=odd, role="owner").user
    created = [
        quota_requests.quota_request_create(
            tenant=tenant,
            requested_by=member,
            justification="Fine-tune.",
            lines=[
                {"resource": "gpu:nvidia-h100-80gb", "amount": 8},
                {"resource": "cpu", "amount": 1200},
            ],
        ),
        quota_requests.quota_request_create(
            tenant=odd,
            requested_by=outsider,
            justification="Serve.",
            lines=[{"resource": "memory-gib", "amount": 64}],
            ends_on=timezone.localdate() + datetime.timedelta(days=30),
        ),
    ]
    QuotaRequest.objects.filter(pk=created[1].pk).update(
        created_at=timezone.now() - datetime.timedelta(days=3)
    )
    return created


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?status__exact=submitted",
        "?status__exact=submitted&all=",
        "?status__exact=submitted&o=-2.1",
        "?tenant=odd-lab&status__exact=submitted",
        "?q=Lab",
    ],
)
def test_the_review_queue_rows_are_djangos_own(admin_client, tenant, tenant_member, query):
    _requests(tenant, tenant_member)

    planned, django = _both(admin_client, reverse("admin:tenants_quotarequest_changelist") + query)

    assert planned == django


def test_the_review_queue_rows_keep_the_filters_in_their_links(admin_client, tenant, tenant_member):
    first, _ = _requests(tenant, tenant_member)
    url = reverse("admin:tenants_quotarequest_changelist") + "?status__exact=submitted"

    planned, _ = _both(admin_client, url)

    assert re.search(
        rf'<th class="field-number"><a href="/admin/tenants/quotarequest/{first.pk}/change/'
        r'\?_changelist_filters=status__exact%3Dsubmitted">#\d+</a></th>',
        "".join(planned),
    )
    assert 'aria-label="Select this object for an action - Quota request' in planned[0]


@pytest.mark.parametrize("query", ["", "?status__exact=active", "?o=2", "?q=lab"])
def test_the_tenant_list_rows_are_djangos_own(admin_client, query):
    TenantFactory(slug="plain-lab", name="Plain Lab")
    TenantFactory(
        slug="dedicated-lab", name="Dedicated <Lab>", isolation="dedicated", cost_center="CC-1"
    )
    TenantFactory(slug="cohort-lab", name="Cohort Lab", cohort="research")
    Tenant.objects.filter(slug="plain-lab").update(
        reconcile_error="quota rejected: <forbidden> & more " * 5
    )

    planned, django = _both(admin_client, reverse("admin:tenants_tenant_changelist") + query)

    assert planned == django


def test_the_review_queue_rows_are_written_once(admin_client, tenant, tenant_member):
    """A row's HTML is written once per process, under everything it shows: a second view of
    the same rows writes none."""
    _requests(tenant, tenant_member)
    url = reverse("admin:tenants_quotarequest_changelist")
    planned, _ = _both(admin_client, url)
    written = len(admin_rows._ROWS)

    again = [as_html(row) for row in changelist_rows(admin_client.get(url).context["cl"])]

    assert again == planned
    assert len(admin_rows._ROWS) == written


def _rename_tenant(first, member):
    Tenant.objects.filter(pk=first.tenant_id).update(name="Renamed <Lab> & Co")
    return "Renamed &lt;Lab&gt; &amp; Co"


def _rename_requester(first, member):
    get_user_model().objects.filter(pk=member.pk).update(username="renamed-member")
    return "renamed-member"


def _reject(first, member):
    QuotaRequest.objects.filter(pk=first.pk).update(status=QuotaRequest.Status.REJECTED)
    return "Rejected"


def _age(first, member):
    QuotaRequest.objects.filter(pk=first.pk).update(
        created_at=timezone.now() - datetime.timedelta(days=9)
    )
    return "9 d"


def _end(first, member):
    QuotaRequest.objects.filter(pk=first.pk).update(ends_on=datetime.date(2031, 1, 31))
    return "2031-01-31"


def _change_line(first, member):
    QuotaRequestLine.objects.filter(request=first, resource="cpu").update(amount=1300)
    return "+1,300"


@pytest.mark.parametrize(
    "change", [_rename_tenant, _rename_requester, _reject, _age, _end, _change_line]
)
def test_a_review_queue_row_follows_every_value_it_shows(
    admin_client, tenant, tenant_member, change
):
    """Each value a row shows, changed alone, is on the next page (the row written anew), as
    Django's own row code renders it."""
    first, _ = _requests(tenant, tenant_member)
    url = reverse("admin:tenants_quotarequest_changelist")
    _both(admin_client, url)

    shown = change(first, tenant_member)
    planned, django = _both(admin_client, url)

    assert planned == django
    assert shown in "".join(planned)


def test_the_tenant_list_rows_follow_every_value_they_show(admin_client):
    TenantFactory(slug="plain-lab", name="Plain Lab")
    url = reverse("admin:tenants_tenant_changelist")
    _both(admin_client, url)

    Tenant.objects.filter(slug="plain-lab").update(
        name="Plain <Lab>", status=Tenant.Status.SUSPENDED, cohort="research",
        cost_center="CC-9", isolation="dedicated", reconcile_error="quota rejected",
    )
    planned, django = _both(admin_client, url)

    assert planned == django
    page = "".join(planned)
    for shown in ["Plain &lt;Lab&gt;", "Suspended", "research", "CC-9", "quota rejected"]:
        assert shown in page
    Tenant.objects.filter(slug="plain-lab").update(reconcile_error="", applied_version=0,
                                                   desired_version=1)
    planned, django = _both(admin_client, url)
    assert planned == django and "quota rejected" not in "".join(planned)


# --- the rest of the changelist: the same HTML as Django's own tags and templates ------------


def _djangos_result_list(cl) -> str:
    return Template("{% load admin_list %}{% result_list cl %}").render(
        Context({"cl": cl, "opts": cl.opts})
    )


@pytest.mark.parametrize(
    "query",
    [
        "?status__exact=submitted",
        "?status__exact=submitted&o=-2.1",
        "?o=6.-1&q=Lab",
        "?tenant=nobody",  # no rows: no table
    ],
)
def test_the_review_queue_table_is_djangos_result_list(admin_client, tenant, tenant_member, query):
    """Header row (cached per query string) and rows (joined in Python) as Django renders them,
    on first and second sight."""
    _requests(tenant, tenant_member)
    url = reverse("admin:tenants_quotarequest_changelist") + query

    for _ in range(2):
        response = admin_client.get(url)
        cl = response.context["cl"]
        planned = result_list_html(cl)
        assert planned == _djangos_result_list(cl)
        assert planned in response.content.decode()


def test_the_review_queue_rows_queryset_built_once_is_never_shared(
    admin_client, platform_admin, tenant, tenant_member
):
    """The queue's rows queryset is built once per process: every view filters a copy of it
    (one view's rows never leak into the next), and it is never evaluated itself."""
    created = _requests(tenant, tenant_member)
    url = reverse("admin:tenants_quotarequest_changelist")

    everyone = admin_client.get(url).context["cl"].result_list
    odd = admin_client.get(url + "?tenant=odd-lab").context["cl"].result_list
    quota_requests.quota_request_reject(
        request_id=created[1].pk, approver=platform_admin, reason="No room."
    )
    waiting = admin_client.get(url + "?status__exact=submitted").context["cl"].result_list

    assert [r.pk for r in everyone] == [created[1].pk, created[0].pk]
    assert [r.pk for r in odd] == [created[1].pk]
    assert [r.pk for r in waiting] == [created[0].pk]
    assert _queue_rows()._result_cache is None


def test_the_review_queue_reads_the_language_once_per_page_not_per_row(
    admin_client, tenant, tenant_member, monkeypatch
):
    """"asked" and "status" answer for a whole page at once (planned_per_page): the same cells
    as the methods give row by row, the language read once per column."""
    for _ in range(3):
        _requests(tenant, tenant_member)
    cl = admin_client.get(reverse("admin:tenants_quotarequest_changelist")).context["cl"]
    reads = []
    language = quota_admin.get_language
    monkeypatch.setattr(quota_admin, "get_language", lambda: reads.append(1) or language())

    planned = [as_html(row) for row in changelist_rows(cl)]
    assert len(reads) == 2
    assert planned == [as_html(row) for row in results(cl)]  # the methods, once per row
    assert len(reads) == 2 + 2 * len(planned) == 14


def test_the_tenant_table_header_follows_the_sort_order(admin_client):
    TenantFactory(slug="b-lab", name="B Lab")
    TenantFactory(slug="a-lab", name="A Lab")
    url = reverse("admin:tenants_tenant_changelist")

    tables = {}
    for query in ["", "?o=2", "?o=-2", "?o=2.1"]:
        cl = admin_client.get(url + query).context["cl"]
        tables[query] = result_list_html(cl)
        assert tables[query] == _djangos_result_list(cl)

    assert len(set(tables.values())) == 4  # each order its own header (and rows)


@pytest.mark.parametrize(
    "query", ["", "?status__exact=submitted", "?status__exact=approved&resource=cpu", "?age=week"]
)
def test_the_review_queue_filters_are_djangos_own(admin_client, tenant, tenant_member, query):
    """Filters with fixed choices come from a cache keyed by the query string: each query
    shows its own selection, as Django's admin_list_filter renders it."""
    _requests(tenant, tenant_member)
    url = reverse("admin:tenants_quotarequest_changelist") + query

    for _ in range(2):
        cl = admin_client.get(url).context["cl"]
        for spec in cl.filter_specs:
            assert planned_list_filter(cl, spec) == admin_list_filter(cl, spec)


def test_a_filter_of_one_name_on_two_models_shows_each_models_choices(admin_client):
    """The tenant list's "status" filter and the review queue's share a field name and title:
    each list shows its own model's statuses, whichever was rendered first."""
    admin_client.get(reverse("admin:tenants_tenant_changelist"))
    html = admin_client.get(reverse("admin:tenants_quotarequest_changelist")).content.decode()
    assert "?status__exact=submitted" in html
    assert "?status__exact=suspended" not in html


def test_the_cohort_filter_lists_the_cohorts_there_are_now(admin_client):
    """A filter whose choices come from the data is cached under the values it read: a new
    cohort shows on the next page, and each query string shows its own selection, as
    Django's admin_list_filter renders it."""
    TenantFactory(slug="one-lab", cohort="research")
    url = reverse("admin:tenants_tenant_changelist")
    assert "teaching" not in admin_client.get(url).content.decode()

    TenantFactory(slug="two-lab", cohort="teaching")

    assert "?cohort=teaching" in admin_client.get(url).content.decode()
    TenantFactory(slug="three-lab", cohort="")
    for query in ["", "?cohort=teaching", "?cohort=research&status__exact=active", ""]:
        cl = admin_client.get(url + query).context["cl"]
        (cohorts,) = [s for s in cl.filter_specs if getattr(s, "field_path", "") == "cohort"]
        assert planned_list_filter(cl, cohorts) == admin_list_filter(cl, cohorts)


def test_the_action_form_is_djangos_own(admin_client, tenant, tenant_member):
    _requests(tenant, tenant_member)
    response = admin_client.get(reverse("admin:tenants_quotarequest_changelist"))
    planned = response.context["action_form"]
    assert isinstance(planned, PlannedActionForm)

    django = ActionForm(auto_id=None)
    django.fields["action"].choices = planned.fields["action"].choices
    for _ in range(2):
        assert [str(field) for field in planned] == [str(field) for field in django]
    assert 'value="approve_selected"' in str(planned["action"])


@pytest.mark.parametrize(
    "url",
    [
        reverse("admin:tenants_quotarequest_changelist"),
        reverse("admin:tenants_quotarequest_changelist") + "?status__exact=submitted",
        reverse("admin:tenants_quotarequest_changelist") + "?status__exact=submitted&all=",
        reverse("admin:tenants_tenant_changelist"),
    ],
)
def test_the_action_bars_are_djangos_own(admin_client, tenant, tenant_member, url):
    """Each action bar of a page (the top one, the bottom one) as Django's admin_actions
    renders it, on first and second sight: its index, the counts and notes of its page."""
    _requests(tenant, tenant_member)
    for _ in range(2):
        response = admin_client.get(url)
        assert response.status_code == 200
        context = {}
        for layer in response.context:
            context.update(layer.flatten())
        context.pop("action_index", None)
        planned = Template(
            "{% load portal_admin %}{% planned_admin_actions %}|{% planned_admin_actions %}"
        ).render(Context(dict(context)))
        django = Template("{% load admin_list %}{% admin_actions %}|{% admin_actions %}").render(
            Context(dict(context))
        )
        assert planned == django
        assert 'name="index" value="1"' in planned
        top = planned.split("|")[0]
        assert top in response.content.decode()


def test_the_pagination_is_djangos_own(admin_client):
    """Page links, count and "Show all" as Django's pagination tag renders them, for each
    page, filter and count, on first and second sight."""
    TenantFactory.create_batch(120, name="Some lab")
    url = reverse("admin:tenants_tenant_changelist")
    planned_tag = Template("{% load portal_admin %}{% planned_pagination cl %}")
    djangos_tag = Template("{% load admin_list %}{% pagination cl %}")
    seen = set()
    for query in ["", "?p=2", "?p=3", "?status__exact=active&p=2", "?q=Some", "?all=", ""]:
        for _ in range(2):
            cl = admin_client.get(url + query).context["cl"]
            context = {"cl": cl, "opts": cl.opts}
            planned = planned_tag.render(Context(context))
            assert planned == djangos_tag.render(Context(context))
            seen.add(planned)
    TenantFactory(name="Some lab")  # one more: the count moves
    cl = admin_client.get(url).context["cl"]
    planned = planned_tag.render(Context({"cl": cl, "opts": cl.opts}))
    assert planned == djangos_tag.render(Context({"cl": cl, "opts": cl.opts}))
    assert planned not in seen
    assert len(seen) == 6


# --- the nav sidebar -----------------------------------------------------------------------------


def test_the_nav_sidebar_app_list_is_djangos_own(rf, platform_admin):
    request = rf.get("/admin/")
    request.user = platform_admin
    cached = admin.site.get_app_list(request)
    again = admin.site.get_app_list(request)

    assert cached == AdminSite.get_app_list(admin.site, request)
    assert again == cached and again is not cached
    cached[0]["models"].clear()  # a caller's copy: the next page still lists every model
    assert admin.site.get_app_list(request) == again


def test_the_nav_sidebar_marks_the_page_it_is_on(admin_client):
    def sidebar(url: str) -> str:
        page = admin_client.get(url).content.decode()
        return page[page.index('<nav class="sticky" id="nav-sidebar"') :]

    tenants = sidebar(reverse("admin:tenants_tenant_changelist"))
    requests = sidebar(reverse("admin:tenants_quotarequest_changelist"))

    assert re.search(r'<tr class="model-tenant current-model">', tenants)
    assert not re.search(r'<tr class="model-quotarequest current-model">', tenants)
    assert re.search(r'<tr class="model-quotarequest current-model">', requests)
    assert 'href="/admin/tenants/tenant/" aria-current="page"' in tenants
    assert 'href="/admin/tenants/tenant/" aria-current="page"' not in requests
    # The same HTML as Django's template renders from the same app list.
    response = admin_client.get(reverse("admin:tenants_tenant_changelist"))
    django = get_template("admin/app_list.html").render(
        {
            "app_list": response.context["available_apps"],
            "show_changelinks": False,
            "request": response.wsgi_request,
        }
    )
    assert django.strip() in response.content.decode()


def test_the_login_page_gets_no_app_list(client):
    response = client.get(reverse("admin:login"))
    assert response.status_code in (200, 302)
    if response.status_code == 200:
        assert not response.context["available_apps"]


def test_planned_dates_are_djangos_localized_dates():
    """Day and minute pieces come from a per-process memo: midnight, noon, mornings, evenings and
    dates read as formats.localize (what display_for_field shows) puts them."""
    stamps = _Dates.for_field(QuotaRequest._meta.get_field("created_at"))
    days = _Dates.for_field(QuotaRequest._meta.get_field("ends_on"))
    base = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    moments = [
        base + datetime.timedelta(days=day, hours=hour, minutes=minute, seconds=second)
        for day in (0, 1, 40)
        for hour, minute in ((0, 0), (0, 5), (9, 0), (11, 59), (12, 0), (12, 30), (23, 1))
        for second in (0, 17)
    ]
    for moment in moments * 2:
        assert stamps(moment) == localize(timezone.template_localtime(moment))
        assert days(moment.date()) == localize(moment.date())


def test_planned_dates_follow_the_language_and_time_zone_of_each_page():
    """The formatters are kept per process: one per language and time zone, each answering
    what formats.localize answers there, whichever was asked first."""
    field = QuotaRequest._meta.get_field("created_at")
    moment = timezone.now().replace(hour=22, minute=30, second=0, microsecond=0)
    english = _Dates.for_field(field)(moment)
    with translation.override("de"), timezone.override("Asia/Tokyo"):
        german = _Dates.for_field(field)(moment)
        assert german == localize(timezone.template_localtime(moment))
    assert english == localize(timezone.template_localtime(moment))
    assert _Dates.for_field(field)(moment) == english
    assert german != english
    assert _Dates.for_field(field) is _Dates.for_field(field)


# --- the whole page: the same HTML as Django's own changelist template ------------------------


def _normalised(html: str) -> str:
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', 'name="csrfmiddlewaretoken"', html)
    return re.sub(r"\s+", " ", re.sub(r">\s+<", "><", html)).strip()


QUERIES = ["", "?status__exact=submitted", "?q=Lab", "?q=Lab&o=-1", "?tenant=odd-lab", "?all="]


@pytest.mark.parametrize(
    "model_admin, url",
    [
        (quota_admin.QuotaRequestAdmin, "admin:tenants_quotarequest_changelist"),
        (TenantAdmin, "admin:tenants_tenant_changelist"),
    ],
)
@pytest.mark.parametrize("query", QUERIES)
def test_the_planned_changelist_page_is_djangos_own(
    admin_client, tenant, tenant_member, monkeypatch, model_admin, url, query
):
    """Every part of the page rendered once per process (rows, header, filters, action bars,
    pagination, breadcrumbs, object tools, search form, scripts) adds up to the page Django's
    own changelist template renders, on first and later sight, whatever the query string."""
    _requests(tenant, tenant_member)
    TenantFactory(slug="plain-lab", name="Plain <Lab>", cost_center="CC-1")
    for other in QUERIES:  # every other page first: what they leave cached must not show
        admin_client.get(reverse(url) + other)
    url = reverse(url) + query
    planned = [_normalised(admin_client.get(url).content.decode()) for _ in range(2)]

    monkeypatch.setattr(model_admin, "change_list_template", None)
    monkeypatch.setattr(model_admin, "action_form", ActionForm)
    django = _normalised(admin_client.get(url).content.decode())

    assert planned == [django, django]


@pytest.mark.parametrize("query", ["?_popup=1", "?_popup=1&_to_field=id"])
def test_a_popup_of_the_review_queue_goes_through_djangos_own_rows(
    admin_client, tenant, tenant_member, query
):
    """A popup (the "+" of a foreign key) keeps Django's row code and its model instances:
    each row's link hands the pk back to the opener."""
    first, second = _requests(tenant, tenant_member)
    response = admin_client.get(reverse("admin:tenants_quotarequest_changelist") + query)

    assert response.status_code == 200
    assert all(isinstance(row, QuotaRequest) for row in response.context["cl"].result_list)
    page = response.content.decode()
    for request in (first, second):
        assert f'data-popup-opener="{request.pk}"' in page
