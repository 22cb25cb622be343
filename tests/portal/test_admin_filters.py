"""portal.admin_filters: the admin's filter of a column's values, read a value at a time."""

import pytest
from django.contrib.admin.filters import AllValuesFieldListFilter
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from portal.admin_filters import DistinctValuesListFilter
from tests.factories import TenantFactory

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
