"""Run by tests/portal/test_demo_sqlite.py in a process of its own, on the SQLite database that
`make demo` uses: every page the benchmark measures (and a few more), as the demo's people open
them; prints one line per page that does not answer 200, then `checked N`."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402

from bench.pages import FLOOR, PAGES  # noqa: E402
from billing.models import Invoice  # noqa: E402
from inventory.models import Node  # noqa: E402
from tenants.models import Membership, Tenant  # noqa: E402
from tenants.workloads.models import Workload  # noqa: E402

tenant = Tenant.objects.order_by("id").first()
objects = {
    "tenant": tenant.slug,
    "workload": Workload.objects.filter(tenant=tenant).values_list("pk", flat=True).first() or 0,
    "node": Node.objects.values_list("pk", flat=True).first(),
    "invoice": Invoice.objects.order_by("-status").values_list("pk", flat=True).first() or 0,
    "month": f"{Invoice.objects.latest('period_start').period_start:%Y-%m}",
}
owner = tenant.memberships.filter(role=Membership.Role.OWNER).first().user
people = {"owner": owner, "admin": get_user_model().objects.get(username="adam"),
          "finance": get_user_model().objects.get(username="fiona")}
paths = [(page.user, page.path.format(**objects)) for page in PAGES if page.name != FLOOR]
paths += [("admin", "/fleet/holdings/"), ("admin", "/admin/tenants/quotarequest/"),
          ("admin", "/api/v1/quota-requests/"), ("finance", "/billing/invoices/?status=issued")]
for who, path in paths:
    client = Client()
    client.force_login(people[who], backend="django.contrib.auth.backends.ModelBackend")
    try:
        response = client.get(path)
        if response.streaming:
            b"".join(response.streaming_content)
        status = response.status_code
    except Exception as exc:
        status = f"{type(exc).__name__}: {str(exc)[:200]}"
    if status != 200:
        print(f"{status} {who} {path}")
print(f"checked {len(paths)}")
