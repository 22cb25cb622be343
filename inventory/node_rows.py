"""The node list's rows, written in Python: the same markup the template wrote per row.

Django's template engine resolved about 25 variables, 10 conditions and 5 filters per row:
most of the 50-row page's time. Each row is now one format_html per cell (escaped as the
template escaped it); tests/inventory/test_node_rows.py holds the template these rows
replaced and checks that every kind of row comes out the same.
"""

from django.contrib.humanize.templatetags.humanize import intcomma
from django.utils.html import format_html
from django.utils.safestring import SafeString

from .models import Node
from .templatetags.inventory_tags import gpu_label

# Markup without a value in it: safe as written.
_HEALTH_BADGES = {
    "critical": SafeString(
        '<span class="badge text-bg-danger" data-health="critical">'
        '<i class="bi bi-x-octagon"></i> Critical</span>'
    ),
    "degraded": SafeString(
        '<span class="badge text-bg-warning" data-health="degraded">'
        '<i class="bi bi-exclamation-triangle"></i> Degraded</span>'
    ),
}
_HEALTHY_BADGE = SafeString(
    '<span class="badge text-bg-success-subtle text-success-emphasis border '
    'border-success-subtle" data-health="healthy"><i class="bi bi-check-circle"></i> '
    "Healthy</span>"
)
_UNRACKED = SafeString('<span class="text-muted small">unracked</span>')
_NO_GPUS = SafeString('<span class="text-muted">—</span>')
_SHARED = SafeString('<span class="text-muted small">shared</span>')


def _name(node: Node, detail_url: str) -> SafeString:
    cell = format_html('<a href="{}" class="fw-semibold">{}</a>', detail_url, node.hostname)
    if node.k8s_name != node.hostname:
        cell += format_html('<div class="small text-muted">{}</div>', node.k8s_name)
    return cell


def _place(node: Node, rack_url: str) -> SafeString:
    if not node.rack:
        return _UNRACKED
    return format_html(
        '<a href="{}">{}/{}</a> <span class="text-muted small">U{}</span>',
        rack_url,
        node.rack.site.slug,
        node.rack.name,
        node.position,
    )


def _gpus(node: Node) -> SafeString:
    if not node.gpu_count:
        return _NO_GPUS
    cell = format_html(
        '{}\u00d7 <span class="small">{}</span>',
        intcomma(node.gpu_count),
        gpu_label(node.gpu_model),
    )
    if node.gpu_sharing != "whole":
        cell += format_html(
            ' <span class="badge text-bg-{}" data-sharing="{}">{}</span>',
            node.gpu_sharing_color,
            node.gpu_sharing,
            node.get_gpu_sharing_display(),
        )
    return cell


def _health(node: Node) -> SafeString:
    cell = _HEALTH_BADGES.get(node.health, _HEALTHY_BADGE)
    if node.open_events:
        cell += format_html(
            ' <span class="small text-muted">{} open</span>', intcomma(node.open_events)
        )
    return cell


def _reserved(node: Node) -> SafeString:
    if not node.reserved_for:
        return _SHARED
    return format_html(
        '<span class="badge text-bg-light border"><i class="bi bi-lock"></i> {}</span>',
        node.reserved_for,
    )


def node_row(node: Node, *, detail_url: str, rack_url: str) -> SafeString:
    """One `<tr>` of the node list: name, site/rack, GPUs, state, health, reserved, CPU."""
    return format_html(
        '<tr data-node="{}"><td>{}</td><td>{}</td><td>{}</td>'
        '<td><span class="badge text-bg-{}" data-state="{}">{}</span></td>'
        "<td>{}</td><td>{}</td>"
        '<td class="text-end small text-nowrap">{} vCPU · {} GiB</td></tr>',
        node.hostname,
        _name(node, detail_url),
        _place(node, rack_url),
        _gpus(node),
        node.state_color,
        node.state,
        node.get_state_display(),
        _health(node),
        _reserved(node),
        intcomma(node.cpu_cores),
        intcomma(node.memory_gib),
    )
