"""The dashboard's cards are written in Python (tenants/access/dashboard.py) as the template
wrote them: every kind of row reads the same, markup in names escaped."""

# ruff: noqa: E501 (the old cards' template, line for line)

import datetime
import re

import pytest
from django.contrib.auth import get_user_model
from django.template import engines
from django.urls import reverse
from django.utils import timezone

from tenants.access.dashboard import member_items, quota_bars, request_items, workload_items
from tenants.models import Membership, QuotaRequest, Source
from tenants.quota.models import resource_label
from tenants.quota.selectors import QuotaLine
from tenants.workloads.models import Workload, WorkloadStatus

User = get_user_model()

# templates/tenants/_quota_bars.html and the dashboard's loops, before they were written in
# Python.
OLD_BARS = engines["django"].from_string("""{% load tenant_format %}{% for line in quota_lines %}
  <div class="mb-3">
    <div class="d-flex justify-content-between small"><span>{{ line.label }}{% if line.temporary %} <span class="badge text-bg-light border" title="{{ line.temporary|grouped }} of it ends after {{ line.ends_on|date:'Y-m-d' }}">+{{ line.temporary|grouped }} until {{ line.ends_on|date:"M j" }}</span>{% endif %}</span><span class="text-muted" data-used="{{ line.used }}">{{ line.used|grouped }} / {{ line.limit|grouped }}{% if line.cluster_used is not None %} <span class="badge text-bg-light border cluster-in-use" title="What the cluster last reported in use: pods started outside the portal's workloads, or workloads still starting or stopping." data-cluster-in-use="{{ line.cluster_used }}">cluster reports {{ line.cluster_used|grouped }}</span>{% endif %}</span></div>
    <div class="progress" role="progressbar" aria-label="{{ line.label }} used" aria-valuenow="{{ line.percent }}" aria-valuemin="0" aria-valuemax="100" style="height:.6rem">
      <div class="progress-bar{% if line.percent >= 90 %} bg-danger{% elif line.percent >= 70 %} bg-warning{% endif %}" style="width: {{ line.percent }}%"></div>
    </div>
  </div>
{% endfor %}""")
OLD_WORKLOADS = engines["django"].from_string("""{% for w in recent_workloads %}
        <li class="list-group-item d-flex justify-content-between align-items-center" id="dashboard-workload-{{ w.pk }}">
          <span><i class="bi bi-{{ w.kind_entry.icon }} text-muted" aria-hidden="true"></i> <a href="{{ w.detail_url }}">{{ w.name }}</a> <span class="small text-muted">{{ w.kind_label }}</span></span>
          {% include "tenants/workloads/_status_badge.html" %}
        </li>
        {% endfor %}""")
OLD_REQUESTS = engines["django"].from_string("""{% for r in recent_requests %}
          <li class="list-group-item">
            <div class="d-flex justify-content-between align-items-start">
              <a href="{{ r.detail_url }}" class="text-decoration-none">#{{ r.pk }}</a>
              {% include "tenants/_request_status.html" %}
            </div>
            <div class="small">{{ r.asked }}</div>
            <div class="small text-muted">{{ r.created_at|date:"Y-m-d" }}{% if r.requested_by %} · {{ r.requested_by.get_full_name|default:r.requested_by.username }}{% endif %}{% if r.ends_on %} · until {{ r.ends_on|date:"Y-m-d" }}{% endif %}</div>
          </li>
        {% endfor %}""")
OLD_MEMBERS = engines["django"].from_string("""{% for m in members %}
          <li class="list-group-item d-flex justify-content-between align-items-center">
            <span>{{ m.user.get_full_name|default:m.user.username }}<br><span class="small text-muted">{{ m.user.email }}</span></span>
            <span class="text-end"><span class="badge text-bg-{% if m.role == 'owner' %}primary{% elif m.role == 'member' %}secondary{% else %}light{% endif %}">{{ m.get_role_display }}</span>
            {% if m.source == 'keycloak' %}<br><span class="small text-muted" title="Managed in Keycloak"><i class="bi bi-shield-lock"></i> Keycloak</span>{% endif %}</span>
          </li>
        {% endfor %}""")


def _same(html: str) -> str:
    """Whitespace runs read as one space in HTML."""
    return re.sub(r"\s+", " ", html).strip()


def test_quota_bars_of_every_kind_read_as_the_template_wrote_them():
    ends = datetime.date(2027, 3, 9)
    lines = [
        QuotaLine(resource="gpu:nvidia-h100-80gb", label="NVIDIA H100 80GB GPUs", limit=16,
                  used=15, temporary=4, ends_on=ends, cluster_used=12),
        QuotaLine(resource="cpu", label="vCPU", limit=2_500_000, used=1_800_000),
        QuotaLine(resource="memory-gib", label='Memory <b>"GiB"</b> & more', limit=0, used=0,
                  cluster_used=0),
        QuotaLine(resource="mig:x", label="MIG", limit=10, used=1, temporary=1_234, ends_on=ends),
    ]
    new = "".join(quota_bars(lines))
    assert _same(new) == _same(OLD_BARS.render({"quota_lines": lines}))
    assert "bg-danger" in new and "bg-warning" in new and "+1,234 until Mar 9" in new
    assert "&lt;b&gt;" in new and "<b>" not in new
    assert quota_bars([]) == []


@pytest.mark.parametrize("status", WorkloadStatus.values)
@pytest.mark.parametrize("kind", ["vcluster", "inference", "vm", "slurm"])
def test_workload_items_read_as_the_template_wrote_them(kind, status):
    workloads = [Workload(pk=7, kind=kind, name="web<script>", status=status)]
    for w in workloads:
        w.detail_url = reverse("tenants:workload-detail", args=["nova", w.pk])
    new = "".join(workload_items(workloads, "nova"))
    assert _same(new) == _same(OLD_WORKLOADS.render({"recent_workloads": workloads}))
    assert "web&lt;script&gt;" in new


@pytest.mark.parametrize("status", QuotaRequest.Status.values)
def test_request_items_read_as_the_template_wrote_them(status):
    now = timezone.now()
    ada = User(username="ada", first_name="Ada <i>", last_name="Lovelace")
    bare = User(username="x&y")
    asks = [
        (11, ada, datetime.date(2027, 1, 31), ["gpu:nvidia-h100-80gb", "cpu"], [2, 1_000]),
        (12, bare, None, ["odd<&>"], [3]),
        (13, None, None, [], []),
    ]
    requests = []
    for pk, who, ends_on, resources, granted in asks:
        r = QuotaRequest(pk=pk, status=status, created_at=now, ends_on=ends_on, requested_by=who)
        r.line_resources, r.line_granted = resources, granted
        requests.append(r)
    new = "".join(request_items(requests, "nova"))
    for r in requests:  # what the view worked out for the template
        r.detail_url = reverse("tenants:quota-request-detail", args=["nova", r.pk])
        r.asked = ", ".join(f"+{n:,} {resource_label(resource)}" for resource, n in zip(
            r.line_resources, r.line_granted, strict=True))
    assert _same(new) == _same(OLD_REQUESTS.render({"recent_requests": requests}))
    assert "Ada &lt;i&gt; Lovelace" in new and "x&amp;y" in new


def test_member_items_read_as_the_template_wrote_them():
    members = [
        Membership(user=User(username="ada", first_name="Ada", last_name="<L>", email="a@x.io"),
                   role=Membership.Role.OWNER, source=Source.KEYCLOAK),
        Membership(user=User(username="b&b", email='"b"@x.io'), role=Membership.Role.MEMBER,
                   source=Source.LOCAL),
        Membership(user=User(username="cy"), role=Membership.Role.VIEWER, source=Source.LOCAL),
    ]
    new = "".join(member_items(members))
    assert _same(new) == _same(OLD_MEMBERS.render({"members": members}))
    assert new.count("Keycloak</span>") == 1


@pytest.mark.django_db
def test_the_cards_read_the_members_and_latest_workloads_the_orm_reads(tenant, other_tenant):
    from tenants.access.selectors import tenant_members, tenant_members_summary
    from tenants.workloads.selectors import tenant_workloads_recent

    for n, (username, role) in enumerate([("zed", "owner"), ("amy", "viewer"), ("bo", "owner")]):
        user = User.objects.create_user(username=username, first_name=f"F{n}",
                                        last_name="<L>", email=f"{username}@x.io")
        Membership.objects.create(tenant=tenant, user=user, role=role)
    Membership.objects.create(tenant=other_tenant, user=User.objects.create_user("else"),
                              role="owner")
    now = timezone.now()
    for n, status in enumerate(["ready", "deleted", "failed", "pending", "ready", "deleting",
                                "ready", "ready"]):
        workload = Workload.objects.create(tenant=tenant, kind=("vm", "inference")[n % 2],
                                           name=f"w{n}", status=status)
        # Two share a creation time: the id breaks the tie, newest first.
        Workload.objects.filter(pk=workload.pk).update(
            created_at=now - datetime.timedelta(minutes=min(n, 8 - n)))
    Workload.objects.create(tenant=other_tenant, kind="vm", name="theirs", status="ready")

    members = tenant_members_summary(tenant=tenant)
    expected = list(tenant_members(tenant=tenant))
    assert [(m.pk, m.role, m.source, m.user.pk, m.user.username, m.user.get_full_name(),
             m.user.email) for m in members] == [
        (m.pk, m.role, m.source, m.user.pk, m.user.username, m.user.get_full_name(),
         m.user.email) for m in expected]
    assert member_items(members) == member_items(expected)

    recent = tenant_workloads_recent(tenant=tenant, limit=6)
    orm = list(Workload.objects.filter(tenant=tenant).exclude(status="deleted")
               .order_by("-created_at", "-id")[:6])
    assert [(w.pk, w.tenant_id, w.kind, w.name, w.status) for w in recent] == [
        (w.pk, w.tenant_id, w.kind, w.name, w.status) for w in orm]
    assert workload_items(recent, tenant.slug) == workload_items(orm, tenant.slug)
    assert "w1" not in {w.name for w in recent} and len(recent) == 6
