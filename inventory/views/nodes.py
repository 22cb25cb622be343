"""The node list (an htmx partial when filtered), the node detail page and its actions."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.confirmation import confirmation_page, is_confirmed
from core.links import url_prefix
from core.stamps import read_stamps, stamped

from ..filters import NodeFilterSet
from ..forms import (
    ACTION_MOVES,
    ACTIONS,
    EventResolveForm,
    NodeActionForm,
    RetirementRecordForm,
    ValidationResultForm,
    actions_for,
)
from ..models import HealthEvent, Node, NodeState
from ..selectors.drain import nodes_drain_impact
from ..selectors.nodes import (
    clusters_holding_nodes,
    node_get_for_detail,
    node_open_critical_event_count,
    node_row_values,
    node_rows_for_list,
    node_timeline,
    nodes_for_list,
    reserved_tenants_in_use,
    site_choices,
)
from ..services import health, lifecycle
from .access import platform_admin_required

PAGE_SIZE = 50


def _label(filters: NodeFilterSet, name: str) -> str:
    """A filter's label as its form shows it; its own (computed from the model) otherwise."""
    field = filters.form.fields.get(name)
    own = filters.filters[name].label if name in filters.filters else None
    return str((field.label if field is not None else None) or own or name)


def _filter_errors(filters: NodeFilterSet, query) -> list[str]:
    """What is wrong with the filter: an unknown value, or a filter that does not exist."""
    errors = [
        f"{_label(filters, name)}: {message}"
        for name, messages_ in filters.errors.items()
        for message in messages_
    ]
    unknown = sorted(set(query) - set(filters.filters) - {"page"})
    errors += [f"There is no filter “{name}”." for name in unknown]
    return errors


# What the list's rows and count are drawn from.
NODE_LIST_TABLES = ("inventory_site", "inventory_rack", "inventory_node", "inventory_gpu",
                    "inventory_healthevent")


@platform_admin_required
def node_list(request):
    filters = NodeFilterSet(request.GET, queryset=node_rows_for_list())
    errors = _filter_errors(filters, request.GET)
    # A filter that cannot be applied shows no nodes rather than all of them as if it had been.
    nodes = filters.qs.none() if errors else filters.qs
    query = request.GET.copy()
    query.pop("page", None)
    # The filtered count and the filter's choices change only with the inventory: read from
    # the cache between two writes to it (core.stamps).
    stamps = read_stamps()
    paginator = Paginator(nodes, PAGE_SIZE)
    if not errors:
        paginator.count = stamped(
            "node-list:count", NODE_LIST_TABLES, nodes.count, stamps=stamps,
            extra=sorted(query.lists()),
        )
    page = paginator.get_page(request.GET.get("page"))
    context = {
        "filters": filters,
        "filter_errors": errors,
        "page": page,
        "rows": [node_row_values(node) for node in page.object_list],
        "reserved_tenants": stamped(
            "node-list:reserved-for", ["inventory_node"], reserved_tenants_in_use, stamps=stamps
        ),
        "site_choices": stamped("node-list:sites", ["inventory_site"], site_choices,
                                stamps=stamps),
        "cluster_choices": stamped("node-list:clusters", ["inventory_node"],
                                   clusters_holding_nodes, stamps=stamps),
        "states": NodeState.choices,
        # Each row links to its node and rack: the prefixes reversed once, not once per row.
        "node_prefix": url_prefix("inventory:node-detail"),
        "rack_prefix": url_prefix("inventory:rack-detail"),
    }
    template = "inventory/nodes.html#node-table" if request.htmx else "inventory/nodes.html"
    return render(request, template, context, status=400 if errors else 200)


@platform_admin_required
def node_detail(request, node_id: int):
    if request.htmx and request.GET.get("status"):
        # The live status of a draining node: polled until the drain ends, then the whole page
        # reloads to show where the node went (its actions, workloads and timeline changed).
        node = get_object_or_404(nodes_for_list(), pk=node_id)
        response = render(request, "inventory/node_detail.html#node-status", {"node": node})
        if node.state != NodeState.DRAINING:
            response["HX-Refresh"] = "true"
        return response
    stamps = read_stamps()
    # What the node's own rows say, cached between two writes to them; its timeline's audit
    # trail (written by every service) is read on every view.
    context = stamped(
        "node-detail", NODE_DETAIL_TABLES, lambda: _node_detail(node_id), stamps=stamps,
        extra=node_id,
    )
    return render(
        request,
        "inventory/node_detail.html",
        {
            **context,
            "timeline": node_timeline(node=context["node"]),
            "actions": actions_for(context["node"].state),
            "action_form": NodeActionForm(),
            "validation_form": ValidationResultForm(),
            "retirement_form": RetirementRecordForm(),
        },
    )


# The tables a node's page is drawn from (its timeline's audit trail aside).
NODE_DETAIL_TABLES = (
    "inventory_site", "inventory_rack", "inventory_node", "inventory_gpu", "inventory_nic",
    "inventory_nodevalidation", "inventory_healthevent",
)


def _node_detail(node_id: int) -> dict:
    node = node_get_for_detail(node_id=node_id)
    gpus = list(node.gpus.all())
    registered = {d.get("index"): d for d in node.hami_devices or [] if isinstance(d, dict)}
    for gpu in gpus:
        gpu.hami_device = registered.get(gpu.index)  # what HAMi registered for it, if anything
    nics = list(node.nics.all())
    data = {
        "node": node,
        "gpus": gpus,
        "nics": nics,
        "numa_nodes": sorted({d.numa_node for d in [*gpus, *nics] if d.numa_node is not None}),
        "open_events": [e for e in node.health_events.all() if e.is_open],
        "validations": list(node.validations.all()),
    }
    data["parts"] = {
        part: render_to_string(f"inventory/node_detail.html#{part}", data)
        for part in ("topology", "devices", "workloads")
    }
    return data


def _service_call(request, call, success: str) -> None:
    # A refusal (core.errors) becomes a message on the page the person came from, in one
    # place for every page: core.middleware.DomainErrorMiddleware.
    call()
    messages.success(request, success)


def _action_consequences(node: Node, action: str) -> list[str]:
    """What a destructive action does to this node; empty when the action is not destructive."""
    if action == "drain":
        (impact,) = nodes_drain_impact(nodes=[node])
        affected = (
            [f"Tenants affected: {', '.join(impact.tenant_names)}.",
             *(f"Workloads of {tenant.summary}" for tenant in impact.tenants)]
            if impact.tenants else ["No tenant's workload runs there at the last sync."]
        )
        if impact.other_pods:
            affected.append(f"System pods also evicted: {', '.join(impact.other_pods)}.")
        return [f"Every pod on {node} is evicted; tenants' jobs there are interrupted.",
                *affected,
                "The node takes no new work until it is returned to service."]
    if action == "retire":
        return [f"{node} leaves the fleet for good: retired is a final state.",
                "Its GPUs no longer count towards capacity."]
    if action == "return-to-service":
        critical = node_open_critical_event_count(node=node)
        if critical:
            return [f"{node} has {critical} open critical health event(s): all its open "
                    "events are closed and every GPU is marked healthy.",
                    "Tenants' work is scheduled on it again at once."]
    return []


@require_POST
@platform_admin_required
def node_action(request, node_id: int):
    node = get_object_or_404(Node, pk=node_id)
    form = NodeActionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose an action and say why.")
        return redirect("inventory:node-detail", node_id=node.pk)
    action, reason = form.cleaned_data["action"], form.cleaned_data["reason"]
    target, sources = ACTION_MOVES[action]
    # A move the node's state does not allow is refused by the service, with no question first.
    consequences = _action_consequences(node, action) if node.state in sources else []
    if consequences and not is_confirmed(request, name=node.hostname):
        return confirmation_page(
            request, name=node.hostname, title=f"{ACTIONS[action]} {node.hostname}?",
            consequences=[*consequences, f"Why: {reason}"],
            submit_label=f"{ACTIONS[action]} {node.hostname}",
            cancel_url=reverse("inventory:node-detail", args=[node.pk]),
            keep=("action", "reason"), type_name=True,
        )
    calls = {
        "cordon": lambda: lifecycle.node_cordon(node_id=node.pk, actor=request.user,
                                                reason=reason),
        "uncordon": lambda: lifecycle.node_uncordon(node_id=node.pk, actor=request.user,
                                                    reason=reason),
        "drain": lambda: lifecycle.node_drain(node_id=node.pk, actor=request.user,
                                              reason=reason),
        "return-to-service": lambda: lifecycle.node_return_to_service(
            node_id=node.pk, actor=request.user, reason=reason),
    }
    call = calls.get(action) or (
        lambda: lifecycle.node_transition(node_id=node.pk, target=target, actor=request.user,
                                          reason=reason)
    )
    call()  # a refusal becomes a message in one place: core.middleware
    node.refresh_from_db(fields=["state", "drain_note"])
    # The state the node is in now, not the one asked for: a drain is still evicting pods.
    if node.state == NodeState.DRAINING:
        words = "draining: evicting its pods; it moves to maintenance once they are gone."
    else:
        words = f"{node.get_state_display().lower()}."
    messages.success(request, f"{node}: {words}")
    return redirect("inventory:node-detail", node_id=node.pk)


@require_POST
@platform_admin_required
def node_validation(request, node_id: int):
    node = get_object_or_404(Node, pk=node_id)
    form = ValidationResultForm(request.POST)
    if form.is_valid():
        _service_call(
            request,
            lambda: lifecycle.node_validation_record(
                node_id=node.pk, actor=request.user, kind=form.cleaned_data["kind"],
                passed=form.cleaned_data["passed"], summary=form.cleaned_data["summary"],
            ),
            "Test result recorded.",
        )
    else:
        messages.error(request, "The test result form has errors.")
    return redirect("inventory:node-detail", node_id=node.pk)


@require_POST
@platform_admin_required
def node_retirement(request, node_id: int):
    node = get_object_or_404(Node, pk=node_id)
    form = RetirementRecordForm(request.POST)
    if form.is_valid():
        _service_call(
            request,
            lambda: lifecycle.node_retirement_record(
                node_id=node.pk, actor=request.user, note=form.cleaned_data["note"],
                disks_wiped=form.cleaned_data["disks_wiped"],
                bmc_reset=form.cleaned_data["bmc_reset"],
            ),
            "Retirement steps recorded.",
        )
    return redirect("inventory:node-detail", node_id=node.pk)


@require_POST
@platform_admin_required
def health_event_resolve(request, event_id: int):
    event = get_object_or_404(HealthEvent, pk=event_id)
    form = EventResolveForm(request.POST)
    if form.is_valid():
        note = form.cleaned_data["note"].strip() or "resolved by an admin"
        health.health_event_resolve(event_id=event.pk, actor=request.user, note=note)
        messages.success(request, "Health event resolved.")
    else:
        messages.error(request, "The note cannot be saved: " + " ".join(
            m for errors in form.errors.values() for m in errors))
    return redirect("inventory:node-detail", node_id=event.node_id)
