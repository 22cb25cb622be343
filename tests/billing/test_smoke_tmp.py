import pytest
from tests.billing.finance_data import bill, JAN, FEB, tenant_with_cost_center
pytestmark = pytest.mark.django_db

def test_smoke(login, finance):
    acme = tenant_with_cost_center("acme", "Acme Labs", "CC-100")
    inv = bill(acme, JAN, 10)
    c = login(finance)
    r = c.get("/billing/invoices/")
    assert r.status_code == 200, r.content[:3000]
    r = c.get(f"/billing/invoices/{inv.pk}/")
    assert r.status_code == 200, r.content[:3000]
    r = c.get("/billing/cost-centers/?status=draft")
    assert r.status_code == 200
    for fmt in ("csv","xlsx","pdf"):
        r = c.get(f"/billing/invoices/{inv.pk}/invoice.{fmt}")
        assert r.status_code == 200
    r = c.get("/billing/invoices/export.csv")
    print(b"".join(r.streaming_content).decode())
    r = c.post("/billing/invoices/issue/", {"invoice": [inv.pk]}, follow=True)
    print([str(m) for m in r.context["messages"]])
