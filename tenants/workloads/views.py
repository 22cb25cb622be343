"""Workload pages: the list, the launch forms (htmx-checked, with a live quota preview), the
detail page (live status while work is in progress, the timeline, connection details, its GPU
use, scale, power, delete) and the vCluster kubeconfig download. Thin views over selectors and
services."""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.confirmation import confirmation_page, is_confirmed
from core.error_responses import error_response
from core.errors import Unavailable
from inventory.selectors.nodes import cluster_choices

from ..pages import redirect_to_current, tenant_page
from ..quota.pricing import quoted_price
from . import services
from .endpoint_keys import endpoint_keys_of
from .forms import FORMS, IdlePolicyForm, ScaleForm
from .gpu_metrics import (
    CHART_GPUS,
    DEFAULT_PERIOD,
    PERIODS,
    chart_data,
    holds_gpus,
    workload_gpu_metrics,
)
from .kinds.inference import exposure
from .kinds.vm.spec import POWER_ACTIONS
from .models import IdlePolicy, Workload, WorkloadStatus
from .placement import placement_options
from .publishing import endpoint_exposure
from .registry import KINDS
from .selectors import (
    demand_preview,
    idle_reclaimed,
    launch_context,
    notebook_facts,
    stopped_by_policy,
    tenant_idle_episodes,
    tenant_idle_history,
    tenant_workloads_for_list,
    workload_events,
    workload_get_for_user,
    workload_idle_episode,
)
from .services import idle
from .services.endpoint_keys import IssuedKey
from .services.lifecycle import power_actions, workload_validate

PAGE_SIZE = 25


def _price_per_hour(workloads: list[Workload]) -> dict[int, Decimal]:
    """What each workload's demand costs per hour at today's prices (one quote for them all:
    a unit of every class they hold); a workload holding nothing priced is left out."""
    classes = {resource for w in workloads for resource in (w.demand or {})}
    quote = quoted_price((resource, 1) for resource in classes)
    if quote is None:
        return {}
    prices = {}
    for workload in workloads:
        priced = [(quote.unit_prices[r], int(units)) for r, units in (workload.demand or {}).items()
                  if r in quote.unit_prices]
        if priced:
            prices[workload.pk] = sum((price * units for price, units in priced), Decimal(0))
    return prices


@login_required
def workloads_home(request):
    return redirect_to_current(request, "tenants:workload-list")


@login_required
def workload_list(request, slug: str):
    tenant, context = tenant_page(request, slug, "workloads")
    kind = request.GET.get("kind", "")
    status = request.GET.get("status", "")
    cluster = request.GET.get("cluster", "")
    label = request.GET.get("label", "")[:63]
    clusters = cluster_choices()
    if kind and kind not in KINDS:
        messages.warning(request, f"There is no workload kind “{kind[:40]}”: showing every kind.")
        kind = ""
    if status and status not in WorkloadStatus.values:
        messages.warning(request, f"There is no state “{status[:40]}”: showing every state.")
        status = ""
    if cluster and cluster not in dict(clusters):
        messages.warning(request, f"There is no cluster “{cluster[:40]}”: showing every cluster.")
        cluster = ""
    page = Paginator(
        tenant_workloads_for_list(tenant=tenant, kind=kind or None, status=status or None,
                                  cluster=cluster or None, label=label or None),
        PAGE_SIZE,
    ).get_page(request.GET.get("page"))
    workloads = list(page.object_list)
    prices = _price_per_hour(workloads)
    for w in workloads:  # User.get_full_name(), or the username; "—" once the launcher left
        full_name = f"{w.launched_by_first_name or ''} {w.launched_by_last_name or ''}".strip()
        w.launcher = full_name or w.launched_by_username or "—"
        w.per_hour = prices.get(w.pk)
    page.object_list = workloads
    context |= {
        "page_obj": page,
        "kinds": KINDS.values(),
        "statuses": WorkloadStatus.choices,
        "currency": settings.BILLING_CURRENCY,
        "kind": kind,
        "status": status,
        "clusters": clusters,
        "cluster": cluster,
        "label": label,
        "any_in_progress": any(w.in_progress for w in workloads),
        # Each row links to its workload: the prefix reversed once, not once per row.
        "workload_prefix": reverse("tenants:workload-list", args=[tenant.slug]),
        # The filters as understood (an unknown kind or state is dropped), not the poll's switch.
        "page_params": QueryDict(urlencode({k: v for k, v in (
            ("kind", kind), ("status", status), ("cluster", cluster), ("label", label)) if v})),
    }
    if request.htmx and request.GET.get("rows"):
        return render(request, "tenants/workloads/list.html#rows", context)
    return render(request, "tenants/workloads/list.html", context)


def _launch_page(request, slug: str):
    tenant, context = tenant_page(request, slug, "workloads")
    if not context["can_request"]:
        raise PermissionDenied
    return tenant, context


@login_required
def workload_new(request, slug: str):
    """Which kind to launch: a card per kind, with what the tenant's quota allows of it."""
    tenant, context = _launch_page(request, slug)
    launch = launch_context(tenant=tenant)
    context["kinds"] = [
        {"entry": entry, "quota": launch.quota.get(entry.quota_counter, 0)}
        for entry in KINDS.values()
    ]
    return render(request, "tenants/workloads/new.html", context)


def _kind_form(request, tenant, kind: str, data=None):
    if kind not in FORMS:
        raise Http404
    person = request.user.get_username()
    return FORMS[kind](data, tenant=tenant, prefix=None,
                       context=launch_context(tenant=tenant, person=person))


def _preview(form, tenant, kind: str, *, report: bool = True):
    """The form checked by the kind, and what it would take of the quota (when its spec fields
    are valid: a missing name, or a refusal of the whole launch such as its quota, does not hide
    what the rest would take). `report=False`: the kind's errors are on the form already."""
    if not form.is_valid() and any(name not in ("name", "cluster", NON_FIELD_ERRORS)
                                   for name in form.errors):
        return _unsized(form, tenant)
    try:
        _, demand = workload_validate(tenant=tenant, kind=kind, spec=form.spec(),
                                      person=form.context.person)
    except ValidationError as exc:
        if report:
            form.add_service_errors(exc)
        return _unsized(form, tenant)
    form.offer_clusters(placement_options(tenant=tenant, demand=demand))
    return demand_preview(tenant=tenant, demand=demand)


def _unsized(form, tenant) -> list:
    """No preview: the clusters are offered all the same, without their room."""
    form.offer_clusters(placement_options(tenant=tenant, demand={}), sized=False)
    return []


def _over_quota(preview, slug: str) -> dict | None:
    """When the preview does not fit: the classes short, and the quota request form's address
    with each of them and the amount missing filled in."""
    short = [line for line in preview if not line.fits]
    if not short:
        return None
    query = urlencode([pair for line in short for pair in
                       (("resource", line.resource), ("amount", -line.left_after))])
    return {"lines": short,
            "request_url": f"{reverse('tenants:quota-request-create', args=[slug])}?{query}"}


@login_required
def workload_launch(request, slug: str, kind: str):
    tenant, context = _launch_page(request, slug)
    form = _kind_form(request, tenant, kind, request.POST if request.method == "POST" else None)
    if request.method == "POST":
        refused = False
        if form.is_valid():
            try:
                workload = services.workload_launch(
                    tenant=tenant, actor=request.user, kind=kind,
                    name=form.cleaned_data["name"], spec=form.spec(), cluster=form.cluster,
                    label=form.cleaned_data.get("label", ""),
                )
            except ValidationError as exc:
                form.add_service_errors(exc)
                refused = True
            else:
                # Not "queued": that is Kueue's word, for a workload waiting for GPU quota.
                messages.success(request, f"{workload} is launched: it is being provisioned, "
                                          "and this page follows it.")
                return redirect("tenants:workload-detail", tenant.slug, workload.pk)
        # Refused: the preview again, of what was submitted.
        preview = _preview(form, tenant, kind, report=not refused)
    else:  # what the defaults would take, before anything is typed
        initial = {name: field.initial for name, field in form.fields.items()
                   if field.initial is not None}
        probe = _kind_form(request, tenant, kind, initial)
        preview = _preview(probe, tenant, kind)
        form.fields["cluster"].widget.choices = probe.fields["cluster"].widget.choices
    context |= {"form": form, "kind": KINDS[kind], "preview": preview,
                "over_quota": _over_quota(preview, tenant.slug)}
    return render(request, "tenants/workloads/launch.html", context)


@login_required
@require_POST
def workload_launch_check(request, slug: str, kind: str):
    """The htmx partial: the form's field errors and the quota preview, as the person types."""
    tenant, context = _launch_page(request, slug)
    form = _kind_form(request, tenant, kind, request.POST)
    preview = _preview(form, tenant, kind)
    context |= {"form": form, "kind": KINDS[kind], "preview": preview, "checked": True,
                "over_quota": _over_quota(preview, tenant.slug)}
    return render(request, "tenants/workloads/launch.html#launch-form", context)


def detail_context(workload: Workload, *, issued: IssuedKey | None = None) -> dict:
    """What the detail page shows besides the tenant's header: its timeline, forms, idle
    episode (or why a policy stopped it), an endpoint's keys, and its examples (with a key just
    issued, shown this once)."""
    commands = workload.connection.get("commands") or []
    if issued is not None:
        commands = [(label, exposure.with_key(command, issued.raw)) for label, command in commands]
    events = list(workload_events(workload=workload)[:50])
    idle_episode = workload_idle_episode(workload=workload)
    return {
        "workload": workload,
        "events": events,
        "scale_form": ScaleForm(workload=workload) if workload.is_live else None,
        "idle": idle_episode,
        # An idle episode says it already, with its undo.
        "policy_stop": None if idle_episode else stopped_by_policy(workload, events),
        "currency": settings.BILLING_CURRENCY,
        "holds_gpus": holds_gpus(workload.demand or {}),
        "commands": commands,
        "endpoint_keys": (endpoint_keys_of(workload=workload)
                          if workload.kind == "inference" else None),
        "published": endpoint_exposure(workload.kind) is not None,
        "issued": issued,
        "power_actions": power_actions(workload.kind),
        "notebook": notebook_facts(workload=workload),
    }


def _tenant_workload(request, slug: str, pk: int) -> Workload:
    workload = workload_get_for_user(user=request.user, workload_id=pk)
    if workload.tenant.slug != slug:
        raise Http404
    return workload


@login_required
def workload_detail(request, slug: str, pk: int):
    workload = _tenant_workload(request, slug, pk)
    # The workload's tenant is the page's: visible to the user (or the workload would be a 404).
    _, context = tenant_page(request, slug, "workloads", tenant=workload.tenant)
    if services.workload_refresh(workload=workload):
        # A look was queued (and may already have run): show what it found. Otherwise the
        # workload is as just read, with its tenant and launcher (a reload would drop both).
        workload.refresh_from_db()
    context |= detail_context(workload)
    if request.htmx:
        return render(request, "tenants/workloads/detail.html#status", context)
    return render(request, "tenants/workloads/detail.html", context)


@login_required
def workload_gpu_use(request, slug: str, pk: int):
    """The workload page's GPU use card, which the page loads after itself (htmx): the page
    never waits on Prometheus. An unknown period is the default one; Prometheus down is said
    in the card, which offers to try again."""
    workload = _tenant_workload(request, slug, pk)
    period = request.GET.get("period", DEFAULT_PERIOD)
    if period not in PERIODS:
        period = DEFAULT_PERIOD
    context = {"workload": workload, "periods": PERIODS.values(),
               "period": PERIODS[period], "chart_gpus": CHART_GPUS}
    try:
        metrics = workload_gpu_metrics(workload=workload, period=period)
    except Unavailable as exc:
        context["unavailable"] = str(exc)
    else:
        context["metrics"] = metrics
        if metrics.gpus:
            context["charts"] = chart_data(metrics)
    return render(request, "tenants/workloads/_gpu_use.html", context)


@login_required
@require_POST
def workload_scale(request, slug: str, pk: int):
    workload = _tenant_workload(request, slug, pk)
    _, context = tenant_page(request, slug, "workloads")
    if not context["can_request"]:
        raise PermissionDenied
    form = ScaleForm(request.POST, workload=workload)
    if form.is_valid():
        try:
            services.workload_scale(workload_id=workload.pk, actor=request.user,
                                    changes=form.changes(workload.spec))
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, f"{workload} is being resized.")
            return redirect("tenants:workload-detail", slug, workload.pk)
    context |= detail_context(workload) | {"scale_form": form}
    return render(request, "tenants/workloads/detail.html", context, status=400)


@login_required
@require_POST
def workload_power(request, slug: str, pk: int):
    workload = _tenant_workload(request, slug, pk)
    action = request.POST.get("action", "")
    actions = power_actions(workload.kind) or POWER_ACTIONS
    if action not in actions:  # as the API's 400: bad input, not a server error
        return error_response(
            request, status=400, code="invalid", title="Unknown power action",
            message=f"“{action[:40]}” is not a power action: use {', '.join(actions)}.",
        )
    if action in ("stop", "restart") and not is_confirmed(request, name=workload.name):
        kept = "its home volume" if workload.kind == "notebook" else "its disk"
        consequences = (
            [f"{workload.name} shuts down; {kept} is kept and its GPUs go back to your quota.",
             "Start it again at any time (if the quota still has the GPUs)."]
            if action == "stop" else
            [f"{workload.name} reboots: open SSH sessions and running programs end."]
        )
        return confirmation_page(
            request, name=workload.name, title=f"{action.capitalize()} {workload.name}?",
            consequences=consequences, submit_label=f"{action.capitalize()} {workload.name}",
            cancel_url=reverse("tenants:workload-detail", args=[slug, workload.pk]),
            keep=("action",),
        )
    services.workload_power(workload_id=workload.pk, actor=request.user, action=action)
    messages.success(request, f"{workload}: {action} requested.")
    return redirect("tenants:workload-detail", slug, workload.pk)


@login_required
@require_POST
def workload_delete(request, slug: str, pk: int):
    workload = _tenant_workload(request, slug, pk)
    if not is_confirmed(request, name=workload.name):
        return confirmation_page(
            request, name=workload.name, title=f"Delete {workload}?",
            consequences=[
                f"Every object of {workload.name} is removed from the cluster"
                + (": its data and disks are gone for good." if workload.kind in ("vm", "slurm",
                                                                                  "vcluster")
                   else "."),
                "Its quota is released once the cluster confirms they are gone.",
            ],
            submit_label=f"Delete {workload.name}", type_name=True,
            cancel_url=reverse("tenants:workload-detail", args=[slug, workload.pk]),
        )
    services.workload_delete(workload_id=workload.pk, actor=request.user)
    messages.success(request, f"{workload} is being deleted.")
    return redirect("tenants:workload-detail", slug, workload.pk)


@login_required
def workload_kubeconfig(request, slug: str, pk: int):
    workload = _tenant_workload(request, slug, pk)
    kubeconfig = services.workload_kubeconfig(workload=workload, actor=request.user)
    response = HttpResponse(kubeconfig, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="vcluster-{workload.name}.yaml"'
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def workload_keep_running(request, slug: str, pk: int):
    """Mark it "keep running" with a reason (the idle policy never touches it), or clear it."""
    workload = _tenant_workload(request, slug, pk)
    reason = request.POST.get("reason", "").strip()
    if request.POST.get("keep") == "on" and not reason:
        messages.error(request, "Say why it must keep running: the reason is shown to the "
                                "tenant's people and kept in the audit log.")
        return redirect("tenants:workload-detail", slug, workload.pk)
    try:
        services.workload_keep_running(workload_id=workload.pk, actor=request.user,
                                       reason=reason if request.POST.get("keep") == "on" else "")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("tenants:workload-detail", slug, workload.pk)
    messages.success(request, f"{workload} is kept running: the idle policy leaves it be."
                     if request.POST.get("keep") == "on" else
                     f"{workload} is no longer kept running: the idle policy applies to it.")
    return redirect("tenants:workload-detail", slug, workload.pk)


@login_required
@require_POST
def workload_idle_undo(request, slug: str, pk: int):
    """Undo what the idle policy did (one click): the size it had, or the VM started again."""
    workload = _tenant_workload(request, slug, pk)
    episode = workload_idle_episode(workload=workload)
    if episode is None or episode.state != episode.State.ACTED:
        messages.info(request, "The idle policy has not acted on it: there is nothing to undo.")
        return redirect("tenants:workload-detail", slug, workload.pk)
    try:
        services.idle_undo(episode_id=episode.pk, actor=request.user)
    except ValidationError as exc:
        messages.error(request, "Could not undo it: " + " ".join(exc.messages))
    else:
        messages.success(request, f"{workload}: the idle policy's change is undone.")
    return redirect("tenants:workload-detail", slug, workload.pk)


IDLE_HISTORY_PAGE = 20


@login_required
def idle_gpus(request, slug: str):
    """The tenant's idle GPUs: what idles now and what it costs, what the policy gave back this
    month, the history, and the policy (owners change it)."""
    tenant, context = tenant_page(request, slug, "idle")
    policy = IdlePolicy.objects.filter(tenant=tenant).first()
    form = IdlePolicyForm(instance=policy, defaults=idle.rules_for(None))
    if request.method == "POST":
        if not context["can_manage"]:
            raise PermissionDenied
        form = IdlePolicyForm(request.POST, instance=policy, defaults=idle.rules_for(None))
        if form.is_valid():
            services.idle_policy_save(tenant=tenant, actor=request.user, **form.cleaned_data)
            messages.success(request, "The idle GPU policy is saved: the next sweep applies it.")
            return redirect("tenants:idle-gpus", slug)
    now = timezone.now()
    month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    episodes = tenant_idle_episodes(tenant=tenant)
    costs = [e.cost for e in episodes if e.cost is not None]
    context |= {
        "form": form,
        "rules": idle.rules_for(policy),
        "episodes": episodes,
        "idle_gpus": sum(e.gpus for e in episodes if e.state != e.State.ACTED),
        "idle_cost": sum(costs) if costs else None,
        "reclaimed": idle_reclaimed(start=month, end=now, now=now, tenant_ids=[tenant.pk]),
        "history": Paginator(tenant_idle_history(tenant=tenant), IDLE_HISTORY_PAGE).get_page(
            request.GET.get("page")),
        "currency": settings.BILLING_CURRENCY,
        "workload_prefix": reverse("tenants:workload-list", args=[tenant.slug]),
        "prometheus": bool(settings.PROMETHEUS_URL),
    }
    return render(request, "tenants/workloads/idle.html", context, status=400 if form.errors
                  else 200)
