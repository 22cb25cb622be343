"""What each role sees in a real browser: sign in, land, navigate, sign out; and the edges.

Every landing page is saved under artifacts/screenshots/ for a human to look at.
"""


import pytest
from django.conf import settings

from tests.factories import TEST_PASSWORD
from tests.support.axe import axe_violations, describe
from tests.support.demo_data import demo_loaded
from tests.support.fixtures_browser import fresh_page, screenshot, sign_in, sign_out

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TENANT_NAV = {"Dashboard", "Workloads", "Quota", "Usage & invoices"}
FINANCE_NAV = {"Invoices", "Cost centers", "Usage", "Tenants"}
ADMIN_NAV = {"Fleet", "Requests", "Tenants", "Webhooks", "Django admin"}

JOURNEYS = [
    # username, password, landing path, navigation, active item, what proves the page rendered
    ("olivia", "olivia-owner-demo", "/t/helix/", TENANT_NAV, "Dashboard", "#section-quota"),
    ("mike", "mike-member-demo", "/t/nova/", TENANT_NAV, "Dashboard", "#section-quota"),
    ("fiona", "fiona-finance-demo", "/billing/invoices/", FINANCE_NAV, "Invoices", "h1"),
    ("adam", "adam-admin-demo", "/fleet/", ADMIN_NAV, "Fleet", "#capacity-chart"),
]


def nav_labels(page) -> set[str]:
    return {label.strip() for label in page.locator("#nav-items .nav-label").all_inner_texts()}


def active_label(page) -> str:
    return page.locator("#nav-items .nav-link.active .nav-label").inner_text().strip()


def session_cookie(page):
    cookies = page.context.cookies()
    return next((c for c in cookies if c["name"] == settings.SESSION_COOKIE_NAME), None)


def test_each_demo_role_signs_in_sees_its_navigation_and_signs_out(browser, live_server, subtests):
    # One demo load for the four roles (it is the slow part); each role gets a fresh browser.
    demo_loaded()
    for username, password, landing, nav, active, landmark in JOURNEYS:
        with subtests.test(role=username), fresh_page(browser, live_server) as page:
            sign_in(page, username, password)

            assert page.url == live_server.url + landing
            page.locator(landmark).wait_for()
            assert nav_labels(page) == nav
            assert active_label(page) == active
            assert page.locator("#demo-banner").is_visible()
            assert username in page.locator("#user-menu").inner_text().lower()
            assert session_cookie(page) is not None
            screenshot(page, f"landing-{username}")
            violations = axe_violations(page)
            assert not violations, f"{landing}:\n{describe(violations)}"

            for label in sorted(nav - {"Django admin"}):
                page.locator("#nav-items .nav-link", has_text=label).click()
                page.wait_for_load_state()
                assert active_label(page) == label
                assert not page.locator("#error-page").count(), f"{label} shows an error page"
                violations = axe_violations(page)
                assert not violations, f"{label}:\n{describe(violations)}"
                screenshot(page, f"{username}-{label}")

            page.click("#user-menu")
            screenshot(page, f"user-menu-{username}", full_page=False)
            sign_out(page)

            assert page.url == f"{live_server.url}/accounts/login/"
            assert page.locator("#sign-in").is_visible()
            assert session_cookie(page) is None
            page.goto(landing)
            assert page.url.startswith(f"{live_server.url}/accounts/login/?next=")


def test_wrong_password_shows_a_clear_error(page, tenant_owner):
    page.goto("/accounts/login/")
    screenshot(page, "login")
    page.fill("#id_username", "owner")
    page.fill("#id_password", "not-the-password")
    page.click("#sign-in")

    error = page.locator("#login-error")
    assert "Please enter a correct username and password" in error.inner_text()
    assert page.input_value("#id_username") == "owner"
    assert session_cookie(page) is None
    screenshot(page, "login-error")


def test_repeated_failures_show_the_lock_out_page(page, tenant_owner):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        page.goto("/accounts/login/")
        page.fill("#id_username", "owner")
        page.fill("#id_password", "still-wrong")
        page.click("#sign-in")
    page.locator("#locked-out").wait_for()

    # The right password does not get past the lock.
    sign_in(page, "owner", TEST_PASSWORD)
    assert page.locator("#locked-out").is_visible()
    assert session_cookie(page) is None
    screenshot(page, "locked-out")


def test_unknown_page_is_the_portals_404(page, tenant_owner):
    sign_in(page, "owner", TEST_PASSWORD)
    response = page.goto("/no-such-page/")

    assert response.status == 404
    assert page.locator("#error-page .error-code").inner_text() == "404"
    assert page.locator("#nav-items").is_visible()
    assert page.locator("#demo-banner").is_visible()
    screenshot(page, "error-404")


def test_page_outside_the_role_is_the_portals_403(page, tenant_member):
    sign_in(page, "member", TEST_PASSWORD)
    response = page.goto("/fleet/")

    assert response.status == 403
    assert page.locator("#error-page .error-code").inner_text() == "403"
    screenshot(page, "error-403")


def test_no_role_user_gets_the_no_access_page(page, no_role_user):
    sign_in(page, "newcomer", TEST_PASSWORD)

    assert page.url.endswith("/no-access/")
    assert page.locator("#no-access").is_visible()
    assert nav_labels(page) == set()
    screenshot(page, "no-access")


def test_navigation_collapses_on_a_phone(page, live_server, tenant_owner):
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, "owner", TEST_PASSWORD)

    assert page.locator(".navbar-toggler").is_visible()
    assert not page.locator("#nav-items").is_visible()
    page.click(".navbar-toggler")
    page.locator("#nav-items").wait_for(state="visible")
    assert nav_labels(page) == TENANT_NAV
    screenshot(page, "mobile-nav-open", full_page=False)

    sign_out(page)
    assert page.url == f"{live_server.url}/accounts/login/"


def test_a_failing_page_is_the_portals_500(page, settings):
    settings.ROOT_URLCONF = "tests.portal.urls_raising"
    response = page.goto("/boom/")

    assert response.status == 500
    assert page.locator("#error-page .error-code").inner_text() == "500"
    assert page.locator("#request-id code").inner_text() == response.headers["x-request-id"]
    assert page.locator("a.btn-primary").get_attribute("href") == "/"
    screenshot(page, "error-500")


def test_an_expired_form_is_the_portals_403(page, tenant_owner):
    page.goto("/accounts/login/")
    page.context.clear_cookies()  # the CSRF cookie is gone, as after a long pause
    page.fill("#id_username", "owner")
    page.fill("#id_password", TEST_PASSWORD)
    with page.expect_navigation():
        page.click("#sign-in")

    assert page.locator("#error-page .error-code").inner_text() == "403"
    assert "This form has expired" in page.locator("#error-page").inner_text()
    screenshot(page, "error-csrf")
