"""The tenant filter of the invoice list and the usage explorer: a slug typed in a text box (a
fleet has thousands of tenants, too many for a select on every page), the same `tenant=` query
parameter as before, an unknown slug explained with the tenants it may have meant."""

import pytest

from billing.selectors.tenant_filter import SUGGESTIONS, tenant_choice
from tests.factories import TenantFactory

from .test_finance_pages import books  # noqa: F401 - the invoice list's fixture
from .test_usage_explorer import usage  # noqa: F401 - the explorer's fixture

pytestmark = pytest.mark.django_db

PAGES = ["/billing/invoices/", "/billing/usage/?start=2026-11-01&end=2026-11-30"]


def _url(page: str, query: str) -> str:
    return f"{page}{'&' if '?' in page else '?'}{query}"


def test_the_exact_slug_is_the_tenant_whatever_else_matches(tenant):
    for n in range(SUGGESTIONS + 2):
        TenantFactory(slug=f"acme-{n}", name=f"Acme {n}")

    choice = tenant_choice(" acme ")

    assert choice.tenant == {"slug": "acme", "name": "Acme Labs"}
    assert not choice.unknown and choice.suggestions == []


def test_an_unknown_slug_offers_at_most_a_few_tenants_by_slug_or_name(tenant, other_tenant):
    for n in range(SUGGESTIONS + 2):
        TenantFactory(slug=f"team-{n}", name=f"Corp {n}")

    assert [t["slug"] for t in tenant_choice("GLOB").suggestions] == ["globex"]
    assert [t["slug"] for t in tenant_choice("labs").suggestions] == ["acme"]
    assert len(tenant_choice("corp").suggestions) == SUGGESTIONS
    assert tenant_choice("nothing-like-it").unknown
    assert tenant_choice("").unknown is False and tenant_choice(None).text == ""


@pytest.mark.usefixtures("books", "usage")
@pytest.mark.parametrize("page", PAGES)
def test_the_tenant_is_a_text_box_not_a_select_of_every_tenant(login, finance, page):
    body = login(finance).get(_url(page, "tenant=globex")).content.decode()

    assert '<select class="form-select form-select-sm" name="tenant"' not in body
    assert 'name="tenant" id="id_tenant" value="globex"' in body
    assert '<option value="acme"' not in body
    assert 'id="unknown-tenant"' not in body


@pytest.mark.usefixtures("books", "usage")
@pytest.mark.parametrize("page", PAGES)
def test_an_unknown_tenant_shows_nothing_says_so_and_links_the_close_ones(login, finance, page):
    response = login(finance).get(_url(page, "tenant=glob"))

    assert response.status_code == 200
    body = response.content.decode()
    assert "No tenant has the slug <strong>“glob”</strong>" in body
    assert 'data-tenant="globex" href="?' in body and "tenant=globex" in body
    none = login(finance).get(_url(page, "tenant=%3Cb%3Ezz")).content.decode()
    assert "contains it either" in none
    assert "<b>zz" not in none


def test_an_unknown_tenant_lists_no_invoice(login, finance, books):  # noqa: F811
    response = login(finance).get("/billing/invoices/?tenant=glob")

    assert list(response.context["page"].object_list) == []
    assert response.context["totals"].count == 0


def test_an_unknown_tenant_is_said_in_the_htmx_swapped_table(login, finance, books):  # noqa: F811
    response = login(finance).get("/billing/invoices/?tenant=glob", headers={"HX-Request": "true"})

    body = response.content.decode()
    assert body.lstrip().startswith('<div class="card" id="invoice-table">')
    assert 'id="unknown-tenant"' in body and 'data-tenant="globex"' in body


def test_an_unknown_tenant_in_the_explorer_shows_no_usage(login, finance, usage):  # noqa: F811
    response = login(finance).get("/billing/usage/?start=2026-11-01&end=2026-11-30&tenant=glob")

    assert response.context["rows"] == [] and response.context["utilization"] == []


def test_few_cost_centers_are_a_select_and_many_a_text_box(login, finance):
    from billing.selectors.tenant_filter import MAX_OPTIONS

    from .finance_data import JAN, bill, tenant_with_cost_center

    client = login(finance)
    pages = ["/billing/invoices/", "/billing/cost-centers/", "/billing/usage/"]
    for n in range(MAX_OPTIONS):
        bill(tenant_with_cost_center(f"t-{n}", f"T {n}", f"CC-{n:03}"), JAN, 1)
    for page in pages:
        body = client.get(f"{page}?cost_center=CC-007").content.decode()
        assert '<select class="form-select form-select-sm" name="cost_center"' in body, page
        assert '<option value="CC-007" selected>CC-007</option>' in body, page

    bill(tenant_with_cost_center("one-more", "One more", "CC-999"), JAN, 1)
    for page in pages:
        body = client.get(f"{page}?cost_center=CC-007").content.decode()
        assert 'name="cost_center" id="id_cost_center" value="CC-007"' in body, page
        assert '<option value="CC-0' not in body, page
    # The filter is the same: the text box narrows as the select did.
    response = client.get("/billing/invoices/?cost_center=cc-007")
    assert [i.tenant_name for i in response.context["page"].object_list] == ["T 7"]
