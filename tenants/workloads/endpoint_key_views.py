"""An inference endpoint's API keys on its page: create and rotate (the answer is the page with
the new key shown this once, never a redirect that could show it again; a rotation's
confirmation asks how long the old key keeps working), revoke (confirmed).
Thin views over `services.endpoint_keys`; another tenant's endpoint or key is a 404."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from core.confirmation import Choice, confirmation_page, is_confirmed

from ..pages import tenant_page
from .endpoint_keys import DEFAULT_ROTATION_GRACE_HOURS, ROTATION_GRACE_HOURS, EndpointKey
from .services import endpoint_keys
from .views import _tenant_workload, detail_context


def _operated_endpoint(request, slug: str, pk: int):
    workload = _tenant_workload(request, slug, pk)
    if workload.kind != "inference":
        raise Http404
    _, context = tenant_page(request, slug, "workloads", tenant=workload.tenant)
    if not context["can_request"]:
        raise PermissionDenied
    return workload, context


def _key(workload, key_id: int) -> EndpointKey:
    key = workload.endpoint_keys.filter(pk=key_id).first()
    if key is None:
        raise Http404
    return key


GRACE = Choice(
    field="grace_hours", label="The old key keeps working",
    options=[(str(hours), label) for hours, label in ROTATION_GRACE_HOURS.items()],
    initial=str(DEFAULT_ROTATION_GRACE_HOURS),
)


def _shown_once(request, workload, context, issued, *, status: int = 200):
    context |= detail_context(workload, issued=issued)
    response = render(request, "tenants/workloads/detail.html", context, status=status)
    response["Cache-Control"] = "no-store"
    return response


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def endpoint_key_create(request, slug: str, pk: int):
    """POST: a new key, on the page that shows it once. GET (a reload of that page, whose
    address is this one): the endpoint's page, without the key."""
    if request.method == "GET":
        return redirect("tenants:workload-detail", slug, pk)
    workload, context = _operated_endpoint(request, slug, pk)
    try:
        issued = endpoint_keys.endpoint_key_create(
            workload_id=workload.pk, actor=request.user, name=request.POST.get("name", ""))
    except ValidationError as exc:
        context["key_errors"] = [m for messages_ in exc.message_dict.values() for m in messages_]
        context["key_name"] = request.POST.get("name", "")[:100]
        return _shown_once(request, workload, context, None, status=400)
    return _shown_once(request, workload, context, issued)


@never_cache
@login_required
@require_POST
def endpoint_key_rotate(request, slug: str, pk: int, key_id: int):
    workload, context = _operated_endpoint(request, slug, pk)
    key = _key(workload, key_id)
    page = reverse("tenants:workload-detail", args=[slug, workload.pk])
    if not is_confirmed(request, name=key.name):
        return confirmation_page(
            request, name=key.name, title=f"Rotate the key “{key.name}” of {workload.name}?",
            consequences=["A new key of the same name is made and shown to you once.",
                          "The old one keeps working for the time you choose, so that its "
                          "callers can swap keys; then they get 401. You can still revoke it "
                          "at once meanwhile."],
            submit_label=f"Rotate “{key.name}”", cancel_url=page, choice=GRACE,
        )
    grace = request.POST.get(GRACE.field, GRACE.initial)
    if grace not in dict(GRACE.options):  # only a forged form: the select offers no other
        messages.error(request, "Pick how long the old key keeps working from the list.")
        return redirect(page)
    issued = endpoint_keys.endpoint_key_rotate(workload_id=workload.pk, key_id=key.pk,
                                               actor=request.user, grace_hours=int(grace))
    return _shown_once(request, workload, context, issued)


@login_required
@require_POST
def endpoint_key_revoke(request, slug: str, pk: int, key_id: int):
    workload, _ = _operated_endpoint(request, slug, pk)
    key = _key(workload, key_id)
    page = reverse("tenants:workload-detail", args=[slug, workload.pk])
    if not is_confirmed(request, name=key.name):
        return confirmation_page(
            request, name=key.name, title=f"Revoke the key “{key.name}” of {workload.name}?",
            consequences=["Callers using it get 401 from the gateway within moments.",
                          "A revoked key cannot be restored; create a new one instead."],
            submit_label=f"Revoke “{key.name}”", cancel_url=page,
        )
    endpoint_keys.endpoint_key_revoke(workload_id=workload.pk, key_id=key.pk, actor=request.user)
    messages.success(request, f"Key “{key.name}” revoked: callers using it now get 401.")
    return redirect(page)
