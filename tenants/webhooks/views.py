"""The webhook pages: a tenant's (its owners', under the tenant) and every tenant's (platform
admins', /webhooks/). The list with the add form; a hook's page with its settings, its secret
(shown once when created, then on request), the test button and its delivery log (filtered,
paged, refreshed by htmx while deliveries are pending); enable, disable, delete, redeliver.
Thin views over the services; another tenant's hook is a 404."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from core.confirmation import confirmation_page, is_confirmed
from core.paging import url_maker

from ..access.rules import access_for
from ..pages import tenant_page
from . import services
from .forms import DeliveryFilterForm, WebhookForm
from .models import DeliveryStatus, Webhook
from .selectors import (
    may_manage_webhooks,
    webhook_deliveries,
    webhook_get_for_user,
    webhooks_for_list,
    webhooks_visible_to,
)

DELIVERY_PAGE = 20


def _scope(request, slug: str | None):
    """The tenant (None: the admin-wide pages) and the page's context; 403 for those who may
    see the tenant but not manage its hooks, 404 for everyone else (tenant_page)."""
    if slug is None:
        if not access_for(request.user).platform_admin:
            raise PermissionDenied
        return None, {"page": "webhooks", "list_url": reverse("tenants:webhooks")}
    tenant, context = tenant_page(request, slug, "webhooks")
    if not may_manage_webhooks(request.user, tenant):
        raise PermissionDenied
    return tenant, context | {"list_url": reverse("tenants:webhook-list", args=[slug])}


def _hook(request, slug: str | None, pk: int):
    tenant, context = _scope(request, slug)
    hook = webhook_get_for_user(user=request.user, webhook_id=pk, tenant=tenant,
                                admin_only=slug is None)
    return hook, context | {"hook": hook, "hook_url": f"{context['list_url']}{hook.pk}/"}


def _hook_urls(hooks) -> None:
    """Each hook's page: under its tenant, or the admin-wide pages for every tenant's hooks."""
    tenant_hook, admin_hook = url_maker("tenants:webhook-detail", "slug", "pk"), url_maker(
        "tenants:admin-webhook-detail", "pk")
    for hook in hooks:
        hook.page_url = (admin_hook(hook.pk) if hook.tenant is None
                         else tenant_hook(hook.tenant.slug, hook.pk))


@never_cache
@login_required
def webhook_list(request, slug: str | None = None):
    tenant, context = _scope(request, slug)
    form = WebhookForm()
    if request.method == "POST":
        form = WebhookForm(request.POST)
        if form.is_valid():
            try:
                hook, secret = services.webhook_create(actor=request.user, tenant=tenant,
                                                       **form.cleaned_data)
            except ValidationError as exc:
                form.add_service_errors(exc)
            else:
                messages.success(request, f"The webhook {hook.name} is registered.")
                return _detail(request, slug, hook.pk, secret=secret)
    hooks = webhooks_visible_to(request.user)
    hooks = list(webhooks_for_list(hooks.filter(tenant=tenant) if tenant else hooks))
    _hook_urls(hooks)
    context |= {"hooks": hooks, "form": form, "admin_scope": tenant is None}
    return render(request, "tenants/webhooks/list.html", context)


def _detail(request, slug, pk, *, secret: str = "", form: WebhookForm | None = None):
    hook, context = _hook(request, slug, pk)
    filters = DeliveryFilterForm(request.GET)
    chosen = filters.filters()
    page = Paginator(webhook_deliveries(webhook=hook, **chosen), DELIVERY_PAGE).get_page(
        request.GET.get("page"))
    context |= {
        "form": form or WebhookForm.of(hook), "filters": filters, "page_obj": page,
        "secret": secret, "admin_scope": slug is None,
        "any_pending": any(d.status == DeliveryStatus.PENDING for d in page.object_list),
        "page_params": QueryDict(urlencode({k: v for k, v in chosen.items() if v})),
    }
    if request.htmx and not secret:
        return render(request, "tenants/webhooks/detail.html#deliveries", context)
    response = render(request, "tenants/webhooks/detail.html", context)
    if secret:
        response["Cache-Control"] = "no-store"
    return response


@never_cache
@login_required
def webhook_detail(request, pk: int, slug: str | None = None):
    """GET: the hook and its delivery log (the log alone for htmx). POST: change it."""
    if request.method != "POST":
        return _detail(request, slug, pk)
    hook, _ = _hook(request, slug, pk)
    form = WebhookForm(request.POST)
    if form.is_valid():
        try:
            services.webhook_update(actor=request.user, webhook=hook, **form.cleaned_data)
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, f"The webhook {form.cleaned_data['name']} is saved.")
            return redirect(request.path)
    return _detail(request, slug, pk, form=form)


ACTIONS = {
    "test": (services.webhook_test_send, "A test event is on its way: it shows in the log."),
    "enable": (services.webhook_enable, "The webhook is enabled: events are sent to it again."),
    "disable": (services.webhook_disable, "The webhook is disabled: nothing is sent to it."),
}


@never_cache
@login_required
@require_POST
def webhook_action(request, pk: int, action: str, slug: str | None = None):
    hook, context = _hook(request, slug, pk)
    if action == "secret":
        return _detail(request, slug, pk, secret=services.webhook_secret_reveal(
            actor=request.user, webhook=hook))
    if action == "delete":
        return _delete(request, hook, context)
    if action not in ACTIONS:
        raise Http404
    service, done = ACTIONS[action]
    service(actor=request.user, webhook=hook)
    messages.success(request, done)
    return redirect(context["hook_url"])


def _delete(request, hook: Webhook, context):
    if not is_confirmed(request, name=hook.name):
        return confirmation_page(
            request, name=hook.name, title=f"Delete the webhook {hook.name}?",
            consequences=[f"Nothing more is sent to {hook.url}.",
                          "Its delivery log goes with it."],
            submit_label=f"Delete {hook.name}", cancel_url=context["hook_url"],
        )
    services.webhook_delete(actor=request.user, webhook=hook)
    messages.success(request, f"The webhook {hook.name} is deleted.")
    return redirect(context["list_url"])


@login_required
@require_POST
def webhook_redeliver(request, pk: int, delivery_id: int, slug: str | None = None):
    hook, context = _hook(request, slug, pk)
    delivery = hook.deliveries.filter(pk=delivery_id).first()
    if delivery is None:
        raise Http404
    services.webhook_delivery_redeliver(actor=request.user, delivery=delivery)
    messages.success(request, f"{delivery.event_type} {delivery.event_id} is sent again.")
    return redirect(context["hook_url"])
