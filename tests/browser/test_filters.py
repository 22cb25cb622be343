"""Every filter form of every list, driven from a real browser on the demo's data.

Each form is submitted as it loads (its defaults), then with each option of each of its
selects and each of its checkboxes: every answer is a page or part without an error, the
choice is still shown (the labels), and where a row says what it was filtered on, every row
listed matches the choice. Choosing the empty option ("Any state", "All sites", ...) again lists
what the defaults listed. On the node list (htmx), an answer the server refuses shows its error
above the table and a failed request leaves no rows under the new choice.
"""

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.demo_data import demo_loaded
from tests.support.fixtures_browser import fresh_page, screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORDS = {
    "olivia": "olivia-owner-demo", "fiona": "fiona-finance-demo", "adam": "adam-admin-demo",
}

LISTS = [
    # role, path, the filter form, the rows it lists, the element that names its count (or "")
    ("adam", "/fleet/nodes/", "#node-filters", "#node-table tbody tr[data-node]", "#node-count"),
    ("fiona", "/billing/invoices/", "#invoice-filters", "#invoice-table tr[data-invoice]",
     "#invoice-count"),
    ("fiona", "/billing/cost-centers/", "#rollup-filters", "#rollup-table tbody tr", ""),
    ("fiona", "/billing/usage/", "#usage-filters", "#usage-table tbody tr", "#usage-row-count"),
    ("olivia", "/t/helix/workloads/", "#workload-filters", "#workload-rows tbody tr", ""),
    ("adam", "/tenants/", "#tenant-filters", "#tenant-table tbody tr", "#tenant-count"),
    # Django admin's review queue: its tenant filter is a form (the other filters are links).
    ("adam", "/admin/tenants/quotarequest/", "#changelist-filter form[role=search]",
     "#result_list tbody tr", ""),
]

# Where a listed row says the value a select filtered on: (select's name) → (an element in the
# row, or "" for the row itself; its attribute that must equal the chosen value).
ROW_VALUES = {
    "/fleet/nodes/": {"state": ("[data-state]", "data-state"),
                      "health": ("[data-health]", "data-health")},
    "/billing/invoices/": {"status": ("", "data-status")},
}
ERROR_ALERTS = "#filter-errors:visible, #htmx-error, #error-page, .errornote"


def _settled(page) -> None:
    page.wait_for_load_state()
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling')")


def _submit(page, form: str, path: str, action) -> int:
    """Run `action` (which changes or submits the form) and return the status of the answer."""
    def is_answer(response):
        return urlsplit(response.url).path == path and response.request.method == "GET"

    if page.evaluate("f => document.querySelector(f).hasAttribute('hx-get')", form):
        with page.expect_response(is_answer) as answer:  # htmx swaps a part of the page
            action()
    else:
        with page.expect_navigation() as answer:  # a new page
            action()
    _settled(page)
    return answer.value.status


def _listed(page, rows: str, count: str) -> tuple[int, str]:
    shown = page.locator(count).first.inner_text().strip() if count else ""
    return page.locator(rows).count(), shown


def _auto_submits(page, form: str, select: str) -> bool:
    """Whether changing the select sends the form by itself (htmx, or an onchange)."""
    return page.evaluate(
        "([f, s]) => document.querySelector(f).hasAttribute('hx-get')"
        " || document.querySelector(s).hasAttribute('onchange')",
        [form, select],
    )


def _request_submit(page, form: str):
    return lambda: page.evaluate("f => document.querySelector(f).requestSubmit()", form)


def _assert_rows_match(page, path: str, rows: str, name: str, value: str) -> None:
    where = ROW_VALUES.get(path, {}).get(name)
    if not where or not value:
        return
    inner, attribute = where
    for row in page.locator(rows).all():
        cell = row.locator(inner).first if inner else row
        assert cell.get_attribute(attribute) == value, (path, name, value, row.inner_html())


def test_every_filter_form_of_every_list_answers_each_choice_and_any(browser, live_server,
                                                                      subtests):
    demo_loaded()
    for username, path, form, rows, count in LISTS:
        with subtests.test(list=path), fresh_page(browser, live_server) as page:
            sign_in(page, username, PASSWORDS[username], next_url=path)
            assert urlsplit(page.url).path == path
            _settled(page)
            default = _listed(page, rows, count)

            status = _submit(page, form, path, _request_submit(page, form))
            assert status == 200, (path, "defaults")
            assert not page.locator(ERROR_ALERTS).count(), (path, "defaults")
            assert _listed(page, rows, count) == default, (path, "defaults")

            selects = page.locator(f"{form} select")
            for index in range(selects.count()):
                select = selects.nth(index)
                name = select.get_attribute("name")
                selector = f"{form} select[name='{name}']"
                values = select.locator("option").evaluate_all("os => os.map(o => o.value)")
                auto = _auto_submits(page, form, selector)
                for value in [*values, ""]:  # every option, then the empty one again
                    def choose(value=value, selector=selector, auto=auto, form=form):
                        page.select_option(selector, value)
                        if not auto:
                            _request_submit(page, form)()

                    status = _submit(page, form, path, choose)
                    where = (path, name, value)
                    assert status == 200, where
                    assert not page.locator(ERROR_ALERTS).count(), where
                    assert page.locator(selector).input_value() == value, where
                    query = parse_qs(urlsplit(page.url).query)
                    assert query.get(name, [""]) == [value] or not value, (where, page.url)
                    _assert_rows_match(page, path, rows, name, value)
                    if value == "" and values[0] == "":
                        # "Any" lists what the defaults did, whatever was chosen before.
                        assert _listed(page, rows, count) == default, where
                if values[0] != "":  # a select with no "any" choice: back to its default
                    page.goto(path)
                    _settled(page)

            boxes = page.locator(f"{form} input[type=checkbox]")
            for index in range(boxes.count()):
                box = boxes.nth(index)
                box.click()
                status = _submit(page, form, path, _request_submit(page, form))
                assert status == 200, (path, box.get_attribute("id"))
                assert not page.locator(ERROR_ALERTS).count(), (path, box.get_attribute("id"))
                box = page.locator(f"{form} input[type=checkbox]").nth(index)
                box.click()  # and back
                _submit(page, form, path, _request_submit(page, form))
                assert _listed(page, rows, count) == default, (path, box.get_attribute("id"))
            screenshot(page, f"filters-{username}-{path}")


def test_a_refused_or_failed_node_filter_shows_its_error_and_no_stale_rows(browser, live_server):
    demo_loaded()
    with fresh_page(browser, live_server) as page:
        sign_in(page, "adam", PASSWORDS["adam"], next_url="/fleet/nodes/")
        rows = "#node-table tbody tr[data-node]"
        assert page.locator(rows).count() > 0

        # A choice the server no longer knows (a site deleted since the page was loaded, say):
        # the answer is a 400 whose error is shown above the table, and no node is listed.
        page.evaluate("() => { document.querySelector('#id_state').options[1].value = 'gone'; }")
        status = _submit(page, "#node-filters", "/fleet/nodes/",
                         lambda: page.select_option("#id_state", "gone"))
        assert status == 400
        error = page.locator("#node-table #filter-errors")
        assert error.is_visible() and "State" in error.inner_text()
        assert page.locator(rows).count() == 0
        assert page.locator("#node-count").inner_text() == "0"
        screenshot(page, "node-filter-refused")

        # Back to any state: every node again, and no error.
        _submit(page, "#node-filters", "/fleet/nodes/",
                lambda: page.select_option("#id_state", ""))
        assert not page.locator("#filter-errors").count()
        listed = page.locator(rows).count()
        assert listed > 0

        # The portal fails (a server error): the rows of the previous filter do not stay under
        # the new choice; the failure is said where the table was.
        page.route("**/fleet/nodes/?*", lambda route: route.fulfill(status=500, body="boom"))
        page.select_option("#id_health", "critical")
        page.locator("#htmx-error").wait_for()
        assert "could not be updated" in page.locator("#htmx-error").inner_text()
        assert page.locator(rows).count() == 0
        screenshot(page, "node-filter-failed")
        page.unroute("**/fleet/nodes/?*")
