"""WCAG 2.2 AA for keyboard focus and reflow, checked in a real browser on every page of every role.

- 1.4.10 reflow: no page scrolls sideways at 375 or 320 CSS px (wide tables scroll in their box).
- 2.4.1 bypass blocks: a skip link is the first thing Tab reaches, and it moves focus to main.
- 2.4.7 focus visible / 2.4.11 focus not obscured: every navbar stop and the sign-in inputs show
  a solid outline of at least 3:1 against what surrounds it, and nothing covers the focused item.
- axe-core (WCAG 2 A and AA rules) finds no serious or critical violation on any page a role
  reaches, Django admin's review queue included.
"""

import re
from collections.abc import Iterator
from contextlib import suppress
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.support.axe import axe_violations, describe, id_problems
from tests.support.demo_data import demo_loaded
from tests.support.fixtures_browser import fresh_page, screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROLES = [
    ("olivia", "olivia-owner-demo"),
    ("mike", "mike-member-demo"),
    ("fiona", "fiona-finance-demo"),
    ("adam", "adam-admin-demo"),
]
# Not portal pages: Django admin has its own look, the API and sign-out are not pages to reflow.
SKIP = re.compile(r"^/(admin|api|oidc|accounts/logout|metrics|healthz|readyz|static)/?|/export/")
PAGES_PER_ROLE = 60


def _page_kind(path: str) -> str:
    """One visit per kind of page: /fleet/nodes/12/ and /fleet/nodes/13/ are the same page."""
    return re.sub(r"/\d+/", "/N/", path)


def _internal_links(page, base: str, skip: re.Pattern = SKIP) -> list[str]:
    # Downloads (a kubeconfig, an export) are marked `download`: following them loads no page.
    hrefs = page.eval_on_selector_all("a[href]:not([download])", "els => els.map(a => a.href)")
    paths = []
    for href in hrefs:
        url = urlsplit(href)
        if href.startswith(base) and not skip.search(url.path):
            paths.append(url.path + (f"?{url.query}" if url.query else ""))
    return paths


FITS = "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"


def _horizontal_overflow(page) -> tuple[int, int]:
    # A chart redraws for the new width a frame or two after a resize: give it a moment.
    with suppress(PlaywrightTimeout):
        page.wait_for_function(FITS, timeout=1_500)
    return page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )


def _too_wide(page, name: str) -> dict[int, int]:
    """The widths (375 and 320 CSS px) at which the open page scrolls sideways, and how wide it
    is there (with a screenshot named after `name`); the viewport is back at 375 afterwards."""
    too_wide = {}
    for width in (375, 320):
        page.set_viewport_size({"width": width, "height": 800})
        scroll_width, viewport = _horizontal_overflow(page)
        if scroll_width > viewport:
            too_wide[width] = scroll_width
            screenshot(page, f"{name}-{width}")
    page.set_viewport_size({"width": 375, "height": 800})
    return too_wide


def _crawl(
    page, live_server, start: str, *, extra: tuple[str, ...] = (), skip: re.Pattern = SKIP
) -> Iterator[tuple[str, str]]:
    """Every kind of page a role reaches by following links from its landing page (and from
    `extra`): each is yielded, as (kind, path), while it is open in `page`."""
    seen: set[str] = set()
    queue = [start, "/account/tokens/", "/no-such-page/", *extra]
    while queue and len(seen) < PAGES_PER_ROLE:
        path = queue.pop(0)
        kind = _page_kind(urlsplit(path).path)
        if kind in seen:
            continue
        seen.add(kind)
        page.goto(path)
        yield kind, path
        queue += _internal_links(page, live_server.url, skip)


# One test per role: each crawls its role's pages (minutes for an admin's), and the parallel
# runs share them out.
@pytest.mark.parametrize(("username", "password"), ROLES, ids=[name for name, _ in ROLES])
def test_no_page_scrolls_sideways_on_a_phone(browser, live_server, username, password):
    demo_loaded()
    with fresh_page(browser, live_server, viewport={"width": 375, "height": 800}) as page:
        sign_in(page, username, password)
        too_wide, kinds = {}, []
        for kind, path in _crawl(page, live_server, urlsplit(page.url).path):
            kinds.append(kind)
            for width, scroll_width in _too_wide(page, f"reflow-{username}-{kind}").items():
                too_wide[f"{path} @{width}"] = scroll_width
        assert len(kinds) >= 5, kinds  # the crawl really walked the role's pages
        assert not too_wide, f"pages wider than the phone: {too_wide}"


# Django admin's review queue (the platform admin's "Requests" lead there) is crawled too; the
# rest of Django admin, and pages that change something when followed, are not.
AXE_SKIP = re.compile(
    r"^/(admin/(?!tenants/quotarequest/)|api|oidc|accounts/logout|metrics|healthz|readyz|static)"
    r"|/export/|/delete/|/history/"
)
ADMIN_REVIEW_QUEUE = ("/admin/tenants/quotarequest/",)
# No part of the page is on its way: htmx marks an element `htmx-request` from the moment its
# request leaves (a part loaded with the page does so before the page's load event) until the
# answer is in, then `htmx-swapping` and `htmx-settling` while it is put in place.
HTMX_SETTLED = "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"


@pytest.mark.parametrize(("username", "password"), ROLES, ids=[name for name, _ in ROLES])
def test_axe_finds_no_serious_violation_on_any_page(browser, live_server, username, password):
    demo_loaded()
    with fresh_page(browser, live_server) as page:
        sign_in(page, username, password)
        extra = ADMIN_REVIEW_QUEUE if username == "adam" else ()
        found, broken_ids, kinds = {}, {}, []
        for kind, path in _crawl(
            page, live_server, urlsplit(page.url).path, extra=extra, skip=AXE_SKIP
        ):
            kinds.append(kind)
            with suppress(PlaywrightTimeout):  # a part loaded by htmx (the spend card)
                page.wait_for_function(HTMX_SETTLED, timeout=3_000)
            if violations := axe_violations(page):
                found[path] = violations
                screenshot(page, f"axe-{username}-{kind}")
            problems = id_problems(page)
            # Icons are decoration beside their words: hidden from screen readers.
            if page.locator("i.bi:not([aria-hidden=true])").count():
                problems.append("an icon not hidden from screen readers")
            if problems:
                broken_ids[path] = problems
        assert len(kinds) >= 5, kinds
        if username == "adam":
            assert any(k.startswith("/admin/tenants/quotarequest/N/") for k in kinds), kinds
        assert not found, "axe violations:\n" + "\n".join(
            f"{path}\n{describe(violations)}" for path, violations in found.items()
        )
        assert not broken_ids, broken_ids


def test_anonymous_pages_reflow_at_320(page, live_server):
    for path in ("/accounts/login/", "/no-such-page/"):
        page.set_viewport_size({"width": 320, "height": 700})
        page.goto(path)
        scroll_width, viewport = _horizontal_overflow(page)
        assert scroll_width <= viewport, path


# --- focus ------------------------------------------------------------------------------------

FOCUS_STATE = """() => {
  const el = document.activeElement;
  const style = getComputedStyle(el);
  const rect = el.getBoundingClientRect();
  const x = Math.min(Math.max(rect.left + rect.width / 2, 0), innerWidth - 1);
  const y = Math.min(Math.max(rect.top + rect.height / 2, 0), innerHeight - 1);
  const top = document.elementFromPoint(x, y);
  // The colour the outline is drawn on: the nearest ancestor with an opaque background.
  let node = el.parentElement, behind = "rgb(255, 255, 255)";
  while (node) {
    const bg = getComputedStyle(node).backgroundColor;
    if (bg && bg !== "transparent" && !bg.startsWith("rgba(0, 0, 0, 0")) { behind = bg; break; }
    node = node.parentElement;
  }
  return {
    id: el.id, tag: el.tagName, text: (el.innerText || el.value || "").trim().slice(0, 40),
    className: String(el.className),
    outlineStyle: style.outlineStyle, outlineWidth: parseFloat(style.outlineWidth),
    outlineColor: style.outlineColor, behind,
    inView: rect.width > 0 && rect.height > 0 && rect.top >= 0 && rect.left >= 0
            && rect.bottom <= innerHeight && rect.right <= innerWidth,
    uncovered: top !== null && (el === top || el.contains(top)),
  };
}"""


def _rgb(color: str) -> tuple[float, float, float]:
    r, g, b = (int(v) for v in re.findall(r"[\d.]+", color)[:3])
    return r, g, b


def _contrast(one: str, two: str) -> float:
    def luminance(rgb):
        channels = [c / 255 for c in rgb]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(_rgb(one)), luminance(_rgb(two))), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _assert_focus_visible(state: dict) -> None:
    where = f"{state['tag']}#{state['id']} “{state['text']}”"
    assert state["outlineStyle"] not in ("none", "hidden"), f"no outline on {where}"
    assert state["outlineWidth"] >= 2, f"outline thinner than 2px on {where}"
    ratio = _contrast(state["outlineColor"], state["behind"])
    assert ratio >= 3, f"outline {ratio:.1f}:1 against {state['behind']} on {where}"
    assert state["inView"] and state["uncovered"], f"{where} is focused out of sight or covered"


@pytest.mark.parametrize("username", ["olivia", "fiona", "adam"])
def test_tab_reaches_the_skip_link_first_then_every_navbar_item_with_a_visible_outline(
    browser, live_server, username
):
    demo_loaded()
    password = dict(ROLES)[username]
    with fresh_page(browser, live_server) as page:
        sign_in(page, username, password)
        landing = page.url

        page.keyboard.press("Tab")
        first = page.evaluate(FOCUS_STATE)
        assert first["id"] == "skip-link", first
        _assert_focus_visible(first)
        screenshot(page, f"focus-skip-link-{username}", full_page=False)
        page.keyboard.press("Enter")
        assert page.evaluate("() => document.activeElement.id") == "main"
        assert page.url == landing + "#main"

        page.goto(landing)
        page.keyboard.press("Tab")  # the skip link
        navbar_stops = page.locator("nav.navbar a:visible, nav.navbar button:visible").count()
        for _ in range(navbar_stops):
            page.keyboard.press("Tab")
            state = page.evaluate(FOCUS_STATE)
            assert page.evaluate("() => !!document.activeElement.closest('nav.navbar')"), state
            _assert_focus_visible(state)
        screenshot(page, f"focus-navbar-{username}", full_page=False)


def test_the_sign_in_inputs_and_button_show_a_visible_outline(page, tenant_owner):
    page.goto("/accounts/login/")
    first_focusable = page.evaluate(
        "() => document.querySelector('a[href], button, input:not([type=hidden]), select').id"
    )
    assert first_focusable == "skip-link"
    for step, expected in enumerate(("id_username", "id_password", "sign-in")):
        if step:  # the username field has focus on arrival (autofocus)
            page.keyboard.press("Tab")
        state = page.evaluate(FOCUS_STATE)
        assert state["id"] == expected, state
        _assert_focus_visible(state)
    screenshot(page, "focus-sign-in-button", full_page=False)


# --- forms after a failed submit, and confirmation pages -------------------------------------

FOCUSED = """() => {
  const el = document.activeElement;
  return {id: el.id, name: el.getAttribute("name") || "", tag: el.tagName,
          invalid: el.getAttribute("aria-invalid")};
}"""
FIRST_INVALID = "() => document.querySelector('form [aria-invalid=true], form .is-invalid').id"


def _assert_clean(page, name: str) -> None:
    violations = axe_violations(page)
    assert not violations, f"{name}:\n{describe(violations)}"
    assert not id_problems(page), (name, id_problems(page))


def test_a_failed_launch_focuses_its_first_error_and_the_delete_confirmation_its_field(
    browser, live_server
):
    demo_loaded()
    with fresh_page(browser, live_server) as page:
        sign_in(page, "olivia", "olivia-owner-demo")
        page.goto("/t/helix/workloads/new/vcluster/")
        _assert_clean(page, "launch form")
        page.fill("#id_name", "Not a DNS name!")
        with page.expect_navigation():
            page.click("#launch-submit")

        assert page.locator("[aria-invalid=true]").count() >= 1
        focused = page.evaluate(FOCUSED)
        assert focused["invalid"] == "true" and focused["id"] == page.evaluate(FIRST_INVALID)
        _assert_clean(page, "launch form with errors")
        screenshot(page, "a11y-launch-errors", full_page=False)

        # A quota request without a resource: focus on the form's message, the first error.
        page.goto("/t/helix/quota/requests/new/")
        with page.expect_navigation():
            page.evaluate("() => document.querySelector('#id_justification').form.requestSubmit()")
        focused_text = page.evaluate("() => document.activeElement.innerText || ''")
        assert "at least one resource" in focused_text, focused_text
        _assert_clean(page, "quota request with errors")

        # A workload's delete asks for its name to be typed: focus is in that field.
        page.goto("/t/helix/workloads/")
        page.locator("#workload-rows tbody tr a").first.click()
        page.wait_for_load_state()
        with page.expect_navigation():
            page.click("#delete")
        assert page.evaluate(FOCUSED)["id"] == "id_confirm"
        _assert_clean(page, "delete confirmation")
        page.fill("#id_confirm", "not-its-name")
        with page.expect_navigation():
            page.click("#confirm-submit")
        # The page's script moves focus once it runs: wait for it (a timeout fails the test).
        page.wait_for_function("() => document.activeElement?.id === 'id_confirm'")
        focused = page.evaluate(FOCUSED)
        assert focused["id"] == "id_confirm" and focused["invalid"] == "true", focused
        _assert_clean(page, "delete confirmation, wrong name")
        screenshot(page, "a11y-confirm-wrong-name", full_page=False)


def test_the_admin_review_page_is_labelled_and_a_refused_decision_focuses_its_error(
    browser, live_server
):
    demo_loaded()
    from tenants.quota.models import QuotaRequest

    pending = QuotaRequest.objects.filter(status=QuotaRequest.Status.SUBMITTED).first()
    assert pending is not None, "the demo has a request waiting for review"
    with fresh_page(browser, live_server) as page:
        sign_in(page, "adam", "adam-admin-demo")
        page.goto(f"/admin/tenants/quotarequest/{pending.pk}/change/")
        page.locator("#decision-form").wait_for()
        _assert_clean(page, "review page")
        for grant in page.locator("#review-lines input[type=number]").all():
            assert page.locator(f"label[for='{grant.get_attribute('id')}']").count() == 1

        page.fill("#id_note", "")
        with page.expect_navigation():
            page.click("#reject")  # a rejection needs a reason
        assert page.locator("#note-errors").is_visible()
        focused = page.evaluate(FOCUSED)
        assert focused["id"] == "id_note" and focused["invalid"] == "true", focused
        _assert_clean(page, "review page, rejected without a reason")
        screenshot(page, "a11y-review-no-reason", full_page=False)
