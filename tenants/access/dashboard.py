"""The tenant dashboard's cards, their rows written here: an `{% include %}`, a `date` or
`grouped` filter and a dozen lookups per row cost the dashboard more than its queries did
(a quarter of each request at fleet scale). The HTML is the one the template wrote
(tests/tenants/test_dashboard_rows.py holds that template and checks they read the same)."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from django.utils.dateformat import format as date_format
from django.utils.safestring import SafeString

from portal.display import grouped, iso_date
from portal.paging import url_maker

from ..quota.models import QuotaRequest, QuotaRequestStatus, resource_label
from ..quota.selectors import QuotaLine
from ..workloads.badges import status_badge
from ..workloads.models import Workload
from .models import Membership, Source

_CLUSTER_TITLE = (
    "What the cluster last reported in use: pods started outside the portal's workloads, "
    "or workloads still starting or stopping."
)


def quota_bars(lines: Iterable[QuotaLine]) -> list[SafeString]:
    """A bar per granted class: in use of granted, a temporary grant's end, the cluster's own
    figure where it differs."""
    bars = []
    for line in lines:
        label = escape(line.label)
        temporary = ""
        if line.temporary:
            amount = grouped(line.temporary)
            ends = line.ends_on
            temporary = (
                f' <span class="badge text-bg-light border" title="{amount} of it ends after'
                f' {iso_date(ends)}">+{amount} until'
                f' {escape(date_format(ends, "M j")) if ends else ""}</span>'
            )
        cluster = ""
        if line.cluster_used is not None:
            cluster = (
                f' <span class="badge text-bg-light border cluster-in-use" title="{_CLUSTER_TITLE}"'
                f' data-cluster-in-use="{line.cluster_used}">'
                f"cluster reports {grouped(line.cluster_used)}</span>"
            )
        percent = line.percent
        color = " bg-danger" if percent >= 90 else " bg-warning" if percent >= 70 else ""
        bars.append(SafeString(
            '\n  <div class="mb-3">'
            f'\n    <div class="d-flex justify-content-between small"><span>{label}{temporary}'
            f'</span><span class="text-muted" data-used="{line.used}">{grouped(line.used)} / '
            f"{grouped(line.limit)}{cluster}</span></div>"
            f'\n    <div class="progress" role="progressbar" aria-label="{label} used"'
            f' aria-valuenow="{percent}" aria-valuemin="0" aria-valuemax="100"'
            ' style="height:.6rem">'
            f'\n      <div class="progress-bar{color}" style="width: {percent}%"></div>'
            "\n    </div>\n  </div>\n"
        ))
    return bars


def workload_items(workloads: Iterable[Workload], slug: str) -> list[SafeString]:
    """The latest workloads: kind, name linked to its page, status."""
    detail_url = url_maker("tenants:workload-detail", "slug", "pk")
    return [
        SafeString(
            '\n        <li class="list-group-item d-flex justify-content-between'
            f' align-items-center" id="dashboard-workload-{w.pk}">'
            f'\n          <span><i class="bi bi-{escape(w.kind_entry.icon)} text-muted"'
            f' aria-hidden="true"></i> <a href="{escape(detail_url(slug, w.pk))}">'
            f"{escape(w.name)}</a>"
            f' <span class="small text-muted">{escape(w.kind_label)}</span></span>'
            f"\n          {status_badge(w.status, w.get_status_display(), stopped=w.stopped)}"
            "\n\n        </li>\n"
        )
        for w in workloads
    ]


def request_items(requests: Iterable[QuotaRequest], slug: str) -> list[SafeString]:
    """The latest quota requests (tenant_quota_requests_recent): number, status, what each
    grants, when, who asked and until when."""
    detail_url = url_maker("tenants:quota-request-detail", "slug", "pk")
    items = []
    for r in requests:
        asked = ", ".join(
            f"+{grouped(n)} {resource_label(resource)}"
            for resource, n in zip(r.line_resources, r.line_granted, strict=True)
        )
        status = r.status
        border = " border" if status == QuotaRequestStatus.WITHDRAWN else ""
        when = iso_date(r.created_at)
        if (who := r.requested_by) is not None:
            when += f" · {escape(who.get_full_name() or who.username)}"
        if r.ends_on:
            when += f" · until {iso_date(r.ends_on)}"
        items.append(SafeString(
            '\n          <li class="list-group-item">'
            '\n            <div class="d-flex justify-content-between align-items-start">'
            f'\n              <a href="{escape(detail_url(slug, r.pk))}"'
            f' class="text-decoration-none">#{r.pk}</a>'
            f'\n              <span class="badge text-bg-{QuotaRequestStatus.color(status)}'
            f'{border}" data-status="{escape(status)}">{escape(r.get_status_display())}</span>'
            f'\n\n            </div>\n            <div class="small">{escape(asked)}</div>'
            f'\n            <div class="small text-muted">{when}</div>\n          </li>\n'
        ))
    return items


_ROLE_COLORS = {Membership.Role.OWNER: "primary", Membership.Role.MEMBER: "secondary"}
_KEYCLOAK = (
    '<br><span class="small text-muted" title="Managed in Keycloak">'
    '<i class="bi bi-shield-lock"></i> Keycloak</span>'
)


def member_items(members: Iterable[Membership]) -> list[SafeString]:
    """The tenant's people: name, e-mail, role, and whether Keycloak manages the membership."""
    return [
        SafeString(
            '\n          <li class="list-group-item d-flex justify-content-between'
            ' align-items-center">'
            f"\n            <span>{escape(m.user.get_full_name() or m.user.username)}<br>"
            f'<span class="small text-muted">{escape(m.user.email)}</span></span>'
            '\n            <span class="text-end"><span class="badge text-bg-'
            f'{_ROLE_COLORS.get(m.role, "light")}">{escape(m.get_role_display())}</span>'
            f"\n            {_KEYCLOAK if m.source == Source.KEYCLOAK else ''}</span>"
            "\n          </li>\n"
        )
        for m in members
    ]
