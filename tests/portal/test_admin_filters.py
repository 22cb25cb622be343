"""core.admin_filters: the admin's filter of a column's values, read a value at a time, and
its filter of a foreign key's rows, read as their names."""

import re

import pytest
from django.contrib.admin.filters import AllValuesFieldListFilter
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from core.admin_filters import DistinctValuesListFilter, RelatedByNameListFilter
from core.models import AuditEvent
from tests.factories import MembershipFactory, TenantFactory

pytestmark = pytest.mark.django_db


def _cohort_filter(response):
    cl = response.context["cl"]
    (spec,) = [s for s in cl.filter_specs if getattr(s, "field_path", None) == "cohort"]
    return cl, spec


def test_the_cohort_filter_lists_the_values_django_lists_in_its_order(login, platform_admin):
    for slug, cohort in [("a-lab", "research"), ("b-lab", ""), ("c-lab", "Zeta"),
                         ("d-lab", "research"), ("e-lab", "alpha-2"), ("f-lab", "alpha")]:
        TenantFactory(slug=slug, cohort=cohort)
    client = login(platform_admin)

    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("admin:tenants_tenant_changelist"))
    cl, spec = _cohort_filter(response)
    django = AllValuesFieldListFilter(
        spec.field, response.wsgi_request, {}, cl.model, cl.model_admin, "cohort"
    )

    assert isinstance(spec, DistinctValuesListFilter)
    # Every value once, in the database's order of them (its collation), as Django lists them.
    assert spec.lookup_choices == list(django.lookup_choices)
    assert sorted(spec.lookup_choices) == ["", "Zeta", "alpha", "alpha-2", "research"]
    assert not any("DISTINCT" in q["sql"] for q in captured.captured_queries)
    html = response.content.decode()
    assert "?cohort=research" in html and "?cohort=alpha-2" in html


def test_a_cohort_chosen_lists_its_tenants(login, platform_admin):
    TenantFactory(slug="in-lab", name="In Lab", cohort="research")
    TenantFactory(slug="out-lab", name="Out Lab", cohort="")

    response = login(platform_admin).get(
        reverse("admin:tenants_tenant_changelist") + "?cohort=research"
    )

    assert [t.slug for t in response.context["cl"].result_list] == ["in-lab"]
    _, spec = _cohort_filter(response)
    assert spec.lookup_val == ["research"]


def test_no_tenants_no_cohorts(login, platform_admin):
    response = login(platform_admin).get(reverse("admin:tenants_tenant_changelist"))

    _, spec = _cohort_filter(response)
    assert spec.lookup_choices == []


@pytest.mark.parametrize(
    "url",
    [
        "admin:tenants_membership_changelist",
        "admin:tenants_workload_changelist",
        "admin:billing_invoice_changelist",
        "admin:billing_usagerecord_changelist",
        "admin:billing_crosscheck_changelist",
        "admin:billing_meteringflag_changelist",
    ],
)
def test_a_tenant_filter_lists_every_tenant_by_name_reading_no_manifests(
    login, platform_admin, url
):
    one = TenantFactory(slug="one-lab", name="One <Lab>")
    TenantFactory(slug="two-lab", name="Two Lab")
    client = login(platform_admin)

    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse(url))
    cl = response.context["cl"]
    (spec,) = [s for s in cl.filter_specs if getattr(s, "field_path", None) == "tenant"]

    assert isinstance(spec, RelatedByNameListFilter)
    names = [name for _, name in spec.lookup_choices]
    assert "One <Lab>" in names and "Two Lab" in names and names == sorted(names)
    html = response.content.decode()
    assert f'href="?tenant__id__exact={one.pk}"' in html and "One &lt;Lab&gt;" in html
    # The tenants listed are read as their keys and names (the rows' own query joins theirs).
    listed = [q["sql"] for q in captured.captured_queries
              if q["sql"].startswith('SELECT "tenants_tenant".')]
    assert listed == ['SELECT "tenants_tenant"."id" AS "id", "tenants_tenant"."name" AS "name" '
                      'FROM "tenants_tenant" ORDER BY 2 ASC']


def test_a_tenant_chosen_lists_its_memberships(login, platform_admin):
    one, two = TenantFactory(slug="one-lab"), TenantFactory(slug="two-lab")
    mine = MembershipFactory(tenant=one)
    MembershipFactory(tenant=two)

    response = login(platform_admin).get(
        reverse("admin:tenants_membership_changelist") + f"?tenant__id__exact={one.pk}"
    )

    assert [m.pk for m in response.context["cl"].result_list] == [mine.pk]
    html = response.content.decode()
    assert re.search(rf'<li class="selected">\s*<a href="\?tenant__id__exact={one.pk}"', html)


def test_the_audit_trail_filters_by_the_values_there_are_and_counts_once(
    login, platform_admin
):
    for action, slug in [("quota.set", "acme"), ("tenant.update", "acme"), ("quota.set", "nova")]:
        AuditEvent.objects.create(action=action, object_type="tenants.tenant", tenant_slug=slug)
    client = login(platform_admin)
    url = reverse("admin:portal_auditevent_changelist") + "?action=quota.set&tenant_slug=acme"

    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)

    cl = response.context["cl"]
    assert [(e.action, e.tenant_slug) for e in cl.result_list] == [("quota.set", "acme")]
    specs = {s.field_path: s for s in cl.filter_specs if hasattr(s, "field_path")}
    assert isinstance(specs["action"], DistinctValuesListFilter)
    assert specs["action"].lookup_choices == ["quota.set", "tenant.update"]
    assert specs["tenant_slug"].lookup_choices == ["acme", "nova"]
    html = response.content.decode()
    assert re.search(r'<li class="selected">\s*<a href="\?action=quota.set&amp;tenant_slug=acme"',
                     html)
    sql = [q["sql"] for q in captured.captured_queries]
    # No DISTINCT over the trail's columns (the date drill-down reads the matches' days).
    assert not any(re.search(r'DISTINCT "portal_auditevent"\.', q) for q in sql)
    assert len([q for q in sql if "COUNT(" in q]) == 1  # the matches, not the whole trail too
