"""The node list's rows, written in Python: the same markup the template wrote per row.

Django's template engine resolved about 25 variables, 10 conditions and 5 filters per row:
most of the 50-row page's time. Each row is now one f-string, its values escaped as the
template escaped them (Python's html.escape, which Django's escape wraps) and its numbers
grouped as `intcomma` groups them; tests/inventory/test_node_rows.py holds the template these
rows replaced and checks that every kind of row comes out the same. (format_html per cell,
their previous form, spent most of a row in Django's lazy-string and escaping wrappers.)
"""

from collections.abc import Callable
from html import escape

from django.contrib.humanize.templatetags.humanize import intcomma
from django.utils.formats import get_format
from django.utils.safestring import SafeString, mark_safe

from .models import GpuSharing, Node, NodeState
from .templatetags.inventory_tags import gpu_label

_HEALTH_BADGES = {
    "critical": (
        '<span class="badge text-bg-danger" data-health="critical">'
        '<i class="bi bi-x-octagon"></i> Critical</span>'
    ),
    "degraded": (
        '<span class="badge text-bg-warning" data-health="degraded">'
        '<i class="bi bi-exclamation-triangle"></i> Degraded</span>'
    ),
}
_HEALTHY_BADGE = (
    '<span class="badge text-bg-success-subtle text-success-emphasis border '
    'border-success-subtle" data-health="healthy"><i class="bi bi-check-circle"></i> '
    "Healthy</span>"
)
_UNRACKED = '<span class="text-muted small">unracked</span>'
_NO_GPUS = '<span class="text-muted">—</span>'
_SHARED = '<span class="text-muted small">shared</span>'
_STATES = {state.value: (NodeState.color(state), escape(state.label)) for state in NodeState}
_SHARING = {s.value: (GpuSharing.color(s), escape(s.label)) for s in GpuSharing}


def grouped_numbers() -> Callable[[int], str]:
    """`intcomma` for whole numbers in the active language, as cheap as a format (the
    language's thousand separator every three digits), or `intcomma` itself elsewhere."""
    if get_format("NUMBER_GROUPING") != 3:
        return lambda number: str(intcomma(number))
    separator = get_format("THOUSAND_SEPARATOR")
    if separator == ",":
        return lambda number: f"{number:,}"
    return lambda number: f"{number:,}".replace(",", separator)


def _e(value: object) -> str:
    return escape(str(value))


def _name(node: Node, detail_url: str) -> str:
    cell = f'<a href="{_e(detail_url)}" class="fw-semibold">{_e(node.hostname)}</a>'
    if node.k8s_name != node.hostname:
        cell += f'<div class="small text-muted">{_e(node.k8s_name)}</div>'
    return cell


def _place(node: Node, rack_url: str) -> str:
    if node.rack_id is None:
        return _UNRACKED
    return (
        f'<a href="{_e(rack_url)}">{_e(node.site_slug)}/{_e(node.rack_name)}</a> '
        f'<span class="text-muted small">U{_e(node.position)}</span>'
    )


def _gpus(node: Node, number: Callable[[int], str]) -> str:
    if not node.gpu_count:
        return _NO_GPUS
    model = _e(gpu_label(node.gpu_model))
    cell = f'{number(node.gpu_count)}\u00d7 <span class="small">{model}</span>'
    if node.gpu_sharing != "whole":
        color, label = _SHARING.get(node.gpu_sharing) or (
            node.gpu_sharing_color, _e(node.get_gpu_sharing_display())
        )
        cell += (
            f' <span class="badge text-bg-{color}" data-sharing="{_e(node.gpu_sharing)}">'
            f"{label}</span>"
        )
    return cell


def _health(node: Node, number: Callable[[int], str]) -> str:
    cell = _HEALTH_BADGES.get(node.health, _HEALTHY_BADGE)
    if node.open_events:
        cell += f' <span class="small text-muted">{number(node.open_events)} open</span>'
    return cell


def _reserved(node: Node) -> str:
    if not node.reserved_for:
        return _SHARED
    return (
        '<span class="badge text-bg-light border"><i class="bi bi-lock"></i> '
        f"{_e(node.reserved_for)}</span>"
    )


def node_row(
    node: Node, *, detail_url: str, rack_url: str,
    number: Callable[[int], str] | None = None,
) -> SafeString:
    """One `<tr>` of the node list: name, site/rack, GPUs, state, health, reserved, CPU.
    `node` as `node_rows_for_list()` gives it (its rack's and site's names annotated);
    `number`: `grouped_numbers()`, worked out once for the page."""
    number = number or grouped_numbers()
    color, label = _STATES[node.state]
    return mark_safe(  # noqa: S308 - every value in it is escaped above
        f'<tr data-node="{_e(node.hostname)}"><td>{_name(node, detail_url)}</td>'
        f"<td>{_place(node, rack_url)}</td><td>{_gpus(node, number)}</td>"
        f'<td><span class="badge text-bg-{color}" data-state="{_e(node.state)}">{label}</span>'
        f"</td><td>{_health(node, number)}</td><td>{_reserved(node)}</td>"
        f'<td class="text-end small text-nowrap">{number(node.cpu_cores)} vCPU · '
        f"{number(node.memory_gib)} GiB</td></tr>"
    )
