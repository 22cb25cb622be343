"""What the benchmark measures: every page and list API of issue 13, and who opens it.

Paths name the objects they need in braces ({tenant}, {workload}, {node}, {invoice}); the
harness fills them from the data set. A page whose path does not resolve yet (billing's pages
that issue 12 is building) is listed in the results as "not built yet" and measured as soon as
its URL exists: add a page here, never a special case in the harness.
"""

from __future__ import annotations

from dataclasses import dataclass

FLOOR = "floor"


@dataclass(frozen=True)
class Page:
    name: str
    path: str
    user: str  # owner | admin | finance (the bench accounts of bench.dataset)
    api: bool = False
    note: str = ""
    # Still being built (billing's pages, issue 12): reported as "not built yet" until its URL
    # resolves. Any other page that does not resolve is an error of this list.
    planned: bool = False
    # Issue 13's target is for every page at its default page size. A page asked for at a larger
    # size, or a whole-list export, is measured and reported beside the others but has no
    # verdict; `beyond_default` says why.
    beyond_default: str = ""

    @property
    def targeted(self) -> bool:
        return self.name != FLOOR and not self.beyond_default


PAGES: tuple[Page, ...] = (
    # The floor: an authenticated page of the same server that runs one query of its own
    # (besides the session and user every signed-in request reads): bench.views.floor, routed
    # by the benchmark's own URLs (bench.urls) only.
    Page(FLOOR, "/bench/floor/", "owner", note="session + user + SELECT 1"),
    Page("api: me (earlier floor)", "/api/v1/me/", "owner", api=True,
         note="the floor of PERFORMANCE.md"),
    # A tenant's pages (its owner).
    Page("tenant dashboard", "/t/{tenant}/", "owner"),
    Page("workload list", "/t/{tenant}/workloads/", "owner", note="25 per page"),
    Page("workload detail", "/t/{tenant}/workloads/{workload}/", "owner"),
    # Quota review (a platform admin).
    Page("portal review queue", "/requests/", "admin", note="default page size"),
    Page("portal review queue, 400", "/requests/?page_size=400", "admin",
         note="400 awaiting review at scale 1", beyond_default="400 rows, 8 times the default"),
    Page("admin review queue", "/admin/tenants/quotarequest/?status__exact=submitted", "admin",
         note="25 per page"),
    Page("admin review queue ?all", "/admin/tenants/quotarequest/?status__exact=submitted&all=",
         "admin", note="show all: Django admin caps it at list_max_show_all (400)",
         beyond_default="every row, the admin's \"Show all\""),
    Page("admin tenant list", "/admin/tenants/tenant/", "admin", note="50 per page"),
    Page("portal tenant list", "/tenants/", "admin", note="50 per page"),
    # The fleet (a platform admin).
    Page("fleet overview", "/fleet/", "admin"),
    Page("node list", "/fleet/nodes/", "admin", note="50 per page"),
    Page("node detail", "/fleet/nodes/{node}/", "admin"),
    # The main list APIs (a platform admin sees every row).
    Page("api: tenants", "/api/v1/tenants/", "admin", api=True, note="50 per page"),
    Page("api: quota requests awaiting review", "/api/v1/quota-requests/?status=submitted",
         "admin", api=True, note="50 per page"),
    Page("api: quota requests awaiting review, 400",
         "/api/v1/quota-requests/?status=submitted&page_size=400", "admin", api=True,
         beyond_default="400 rows, 8 times the default"),
    Page("api: nodes", "/api/v1/nodes/", "admin", api=True, note="50 per page"),
    Page("api: workloads", "/api/v1/workloads/", "admin", api=True, note="50 per page"),
    # Billing (issue 12): the invoice list, an invoice, the usage explorer, and each export.
    Page("finance invoice list", "/billing/invoices/", "finance", note="50 per page"),
    Page("finance invoice list, 250", "/billing/invoices/?page_size=250", "finance",
         note="250 rows, as issue 13 asks", beyond_default="250 rows, 5 times the default"),
    Page("finance invoice detail", "/billing/invoices/{invoice}/", "finance"),
    Page("usage explorer", "/billing/usage/", "finance"),
    # Each export of one invoice (issue 13: "each export (CSV, XLSX, PDF of one invoice)").
    Page("export: invoice CSV", "/billing/invoices/{invoice}/invoice.csv", "finance"),
    Page("export: invoice XLSX", "/billing/invoices/{invoice}/invoice.xlsx", "finance"),
    Page("export: invoice PDF", "/billing/invoices/{invoice}/invoice.pdf", "finance"),
    # The invoice list's exports of one month's issued invoices (2,000 at scale 1), as written
    # while one waits: their time grows with the rows by nature; what is held to a bound is
    # their memory (the web worker's peak RSS) and their query count. A longer list (every
    # invoice: 24,000 at scale 1) is written by a Celery worker in the
    # background instead (billing.services.invoice_exports), not by a web request.
    Page("export: invoice list CSV, one month", "/billing/invoices/export.csv?period={month}",
         "finance", beyond_default="one month's invoices of the data set"),
    Page("export: invoice list XLSX, one month", "/billing/invoices/export.xlsx?period={month}",
         "finance", beyond_default="one month's invoices of the data set"),
)

# The targets: every page's p95 within this many times the floor's with 4 clients, in the fixed
# mode (one URL per page, nothing else running) and in the varied mode (URLs from pools, beat
# running: bench.varied); a web worker's peak RSS after the varied mode under this.
TARGET_RATIO = 4.0
VARIED_TARGET_RATIO = 6.0
WEB_RSS_TARGET_MIB = 250
