"""`load_demo` builds the demo fleet and accounts (each signs in with its role), and loading
twice changes nothing."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.db.models import Count, F
from django.test import RequestFactory

from core.models import AuditEvent, OutboxEmail, SimulatedObject
from inventory.models import GPU, Cluster, Node, Site
from tenants.access import access_for
from tenants.models import Membership, Quota, Tenant
from tenants.workloads.models import VmImage, Workload


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
        Workload.objects.count(),
        VmImage.objects.count(),
        OutboxEmail.objects.count(),
    )
    cluster = dict(SimulatedObject.objects.values_list("pk", "resource_version"))
    call_command("load_demo", stdout=StringIO())
    # The second load touches nothing on the (simulated) cluster either: no node patched again.
    assert dict(SimulatedObject.objects.values_list("pk", "resource_version")) == cluster
    again = (
        Site.objects.count(),
        Node.objects.count(),
        GPU.objects.count(),
        Tenant.objects.count(),
        Membership.objects.count(),
        Quota.objects.count(),
        AuditEvent.objects.count(),
        Workload.objects.count(),
        VmImage.objects.count(),
        OutboxEmail.objects.count(),
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
    # Two clusters, one per site (the default one Amsterdam's), each node on its site's, and
    # each cluster a simulated fleet of its own holding its nodes.
    assert dict(Cluster.objects.values_list("slug", "site__slug")) == {
        "main": "ams1",
        "fra1": "fra1",
    }
    assert not Node.objects.exclude(cluster__site=F("rack__site")).exists()
    nodes = dict(Node.objects.values("cluster").annotate(n=Count("id")).values_list("cluster", "n"))
    simulated = SimulatedObject.objects.filter(kind="Node").values("cluster")
    assert dict(simulated.annotate(n=Count("id")).values_list("cluster", "n")) == nodes
    assert nodes == {"main": 20, "fra1": 20}
    for line in ("olivia", "mike", "fiona", "adam"):
        assert line in out.getvalue()
    # Each account signs in with its role.
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


@pytest.mark.django_db
def test_the_demo_mails_link_to_where_the_demo_is_served(settings, mailoutbox):
    settings.PORTAL_URL = "http://127.0.0.1:8765"
    call_command("load_demo", stdout=StringIO())
    sent = [m for m in OutboxEmail.objects.all() if "/t/" in m.body or "/admin/" in m.body]
    assert sent
    assert all("http://127.0.0.1:8765/" in m.body for m in sent)
    assert not any(":8000" in m.body for m in sent)


def test_make_demo_on_another_port_points_the_mails_there():
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    dry_run = subprocess.run(
        ["make", "-n", "demo", "PORT=8765"], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert dry_run.returncode == 0, dry_run.stderr
    commands = [line for line in dry_run.stdout.splitlines() if "manage.py" in line]
    assert any("load_demo" in c and "PORTAL_URL=http://127.0.0.1:8765" in c for c in commands)
    assert any("runserver" in c and "PORTAL_URL=http://127.0.0.1:8765" in c for c in commands)


@pytest.mark.django_db(transaction=True)  # the mail is sent when the load commits
def test_the_first_load_prints_the_accounts_and_the_url_not_the_demos_mail(
    settings, capsys, tmp_path
):
    # As `make demo` runs it: mail to the console (the development default).
    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    settings.BASE_DIR = tmp_path
    out = StringIO()

    call_command("load_demo", stdout=out)

    printed = capsys.readouterr().out
    assert "Subject:" not in printed  # nothing on the console before (or among) the accounts
    lines = out.getvalue().splitlines()
    mail_dir = tmp_path / "artifacts" / "demo-mail"
    assert lines[0] == f"The e-mails the demo sent while loading are in {mail_dir}/."
    assert lines[1] == "Demo data is loaded. Sign in with:"
    assert [line.split()[0] for line in lines[2:6]] == ["olivia", "mike", "fiona", "adam"]
    assert lines[-1] == f"The portal: {settings.PORTAL_URL}/"
    sent = list(mail_dir.iterdir())
    assert sent and "Subject:" in sent[0].read_text()
    assert settings.EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend"
