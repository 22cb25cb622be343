"""`load_demo` builds the demo fleet and accounts, and loading twice changes nothing."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import RequestFactory

from inventory.models import GPU, Node, Site
from portal.models import AuditEvent
from tenants.access import access_for
from tenants.models import Membership, Quota, Tenant


@pytest.mark.django_db
def test_demo_data_is_complete_and_idempotent():
    out = StringIO()
    call_command("load_demo", stdout=out)
    counts = (
        Site.objects.count(),
        Node.objects.count(),
        GPU.objects.count(),
        Tenant.objects.count(),
        Membership.objects.count(),
        Quota.objects.count(),
        AuditEvent.objects.count(),
    )
    call_command("load_demo", stdout=StringIO())
    again = (
        Site.objects.count(),
        Node.objects.count(),
        GPU.objects.count(),
        Tenant.objects.count(),
        Membership.objects.count(),
        Quota.objects.count(),
        AuditEvent.objects.count(),
    )
    assert counts == again
    assert counts[:4] == (2, 40, 320, 4)
    assert set(GPU.objects.values_list("model", flat=True)) == {
        "nvidia-h200",
        "nvidia-h100-80gb",
        "nvidia-a100-80gb",
        "nvidia-l40s",
    }
    assert Tenant.objects.filter(isolation="dedicated").count() == 1
    assert Node.objects.filter(reserved_for="helix").count() == 4
    for line in ("olivia", "mike", "fiona", "adam"):
        assert line in out.getvalue()


@pytest.mark.django_db
def test_each_demo_account_signs_in_with_its_role():
    call_command("load_demo", stdout=StringIO())
    owner = authenticate(
        RequestFactory().post("/"), username="olivia", password="olivia-owner-demo"
    )
    member = authenticate(RequestFactory().post("/"), username="mike", password="mike-member-demo")
    finance = authenticate(
        RequestFactory().post("/"), username="fiona", password="fiona-finance-demo"
    )
    admin = authenticate(RequestFactory().post("/"), username="adam", password="adam-admin-demo")
    assert "owner" in access_for(owner).tenant_roles.values()
    assert "member" in access_for(member).tenant_roles.values()
    assert access_for(finance).finance and not access_for(finance).platform_admin
    assert access_for(admin).platform_admin
