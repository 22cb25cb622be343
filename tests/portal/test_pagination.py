"""The one pagination component (templates/portal/_pagination.html): its links keep the
request's filters, move only the page, and swap with htmx where the list asks for it."""

import pytest
from django.core.paginator import Paginator
from django.http import QueryDict
from django.template import engines
from django.test import RequestFactory

INCLUDE = engines["django"].from_string(
    '{% include "portal/_pagination.html" with id="rows-pagination" label="Row pages" %}'
)
HTMX = engines["django"].from_string(
    '{% include "portal/_pagination.html" with target="#rows" drop="rows" %}'
)
PARAMS = engines["django"].from_string(
    '{% include "portal/_pagination.html" with page_params=params %}'
)


def _page(number: int):
    return Paginator(range(100), 10).get_page(number)


def _render(template, query: str, number: int, **context) -> str:
    request = RequestFactory().get(f"/rows/?{query}")
    return template.render({"page": _page(number), **context}, request)


def test_the_links_keep_every_filter_and_move_the_page():
    html = _render(INCLUDE, "state=ready&site=a&site=%3Cb%3E&page=3", 3)

    assert 'id="rows-pagination" aria-label="Row pages"' in html
    assert "Page 3 of 10" in html
    assert 'href="?page=2&amp;site=a&amp;site=%3Cb%3E&amp;state=ready">Previous' in html
    assert 'href="?page=4&amp;site=a&amp;site=%3Cb%3E&amp;state=ready">Next' in html
    assert "hx-get" not in html


def test_the_first_and_last_pages_link_one_way_and_one_page_shows_nothing():
    assert "Previous" not in _render(INCLUDE, "", 1) and "Next" in _render(INCLUDE, "", 1)
    assert "Next" not in _render(INCLUDE, "", 10)
    one = Paginator(range(3), 10).get_page(1)
    request = RequestFactory().get("/rows/")
    assert INCLUDE.render({"page": one}, request).strip() == ""


def test_htmx_lists_swap_their_target_and_drop_their_own_switch():
    html = _render(HTMX, "rows=1&kind=vm&page=2", 2)

    assert ('href="?page=3&amp;kind=vm" hx-get="?page=3&amp;kind=vm" hx-target="#rows" '
            'hx-swap="outerHTML" hx-push-url="true"') in html
    assert "rows=1" not in html


@pytest.mark.parametrize("params", ["kind=vm", ""])
def test_the_filters_as_the_view_understood_them_replace_the_query(params):
    html = _render(PARAMS, "kind=bogus&page_size=9999", 2, params=QueryDict(params))

    assert "bogus" not in html and "9999" not in html
    assert f'href="?page=3{"&amp;" + params if params else ""}"' in html
