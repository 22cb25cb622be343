"""Django admin for quota: the grants inline of a tenant, and the quota review queue.

Every decision goes through a service (audit, reconcile and mail after commit).
"""

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.humanize.templatetags.humanize import intcomma
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html_join

from core.admin_lists import RowCheckboxAdmin, RowLinksChangeList
from core.choices import admin_badge
from core.state_machine import InvalidTransition
from inventory import resource_classes
from inventory.models import Cluster

from . import services as quota_requests
from .forms import QuotaDecisionForm, RejectForm
from .models import Quota, QuotaRequest, resource_label
from .selectors import (
    quota_preview,
    quota_request_decision,
    quota_requests_impact,
    tenant_quota_lines,
)


class QuotaInlineForm(forms.ModelForm):
    resource = forms.ChoiceField(
        choices=[
            (key, f"{resource_classes.parse(key).label} ({key})")
            for key in resource_classes.all_keys()
        ]
    )

    class Meta:
        model = Quota
        fields = ["cluster", "resource", "limit", "borrowing_limit", "lending_limit"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Granted on a cluster in service, or (empty) anywhere in the fleet.
        self.fields["cluster"].queryset = Cluster.objects.in_service().order_by("slug")
        self.fields["cluster"].empty_label = "Anywhere"


class QuotaInline(admin.TabularInline):
    model = Quota
    form = QuotaInlineForm
    extra = 0
    fields = [
        "cluster", "resource", "limit", "in_use", "borrowed", "borrowing_limit", "lending_limit",
    ]
    readonly_fields = ["in_use", "borrowed"]


# --- the quota review queue -------------------------------------------------------------------


class ResourceFilter(admin.SimpleListFilter):
    title = "resource"
    parameter_name = "resource"

    def lookups(self, request, model_admin):
        return [(key, resource_classes.parse(key).label) for key in resource_classes.all_keys()]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(lines__resource=self.value()).distinct()
        return queryset


class TenantSlugFilter(admin.SimpleListFilter):
    """The tenant, typed as its slug: a link per tenant would put every tenant (2,000 at fleet
    scale) on every page of the queue, and the search box finds them by name too."""

    title = "tenant"
    parameter_name = "tenant"
    template = "tenants/admin/slug_filter.html"

    def lookups(self, request, model_admin):
        return []

    def has_output(self) -> bool:
        return True

    def choices(self, changelist):
        # One choice: the form's hidden inputs keep the page's other filters, search and order.
        yield {
            "value": self.value() or "",
            "hidden": [
                (name, value)
                for name, values in changelist.filter_params.items()
                if name != self.parameter_name
                for value in values
            ],
        }

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(tenant__slug=self.value().strip())
        return queryset


class AgeFilter(admin.SimpleListFilter):
    title = "age"
    parameter_name = "age"
    BUCKETS = {
        "day": ("Under a day", 0, 1),
        "week": ("1 to 7 days", 1, 7),
        "month": ("1 to 4 weeks", 7, 28),
        "older": ("Over 4 weeks", 28, None),
    }

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _, _) in self.BUCKETS.items()]

    def queryset(self, request, queryset):
        if self.value() not in self.BUCKETS:
            return queryset
        _, newest, oldest = self.BUCKETS[self.value()]
        now = timezone.now()
        queryset = queryset.filter(created_at__lte=now - timedelta(days=newest))
        if oldest is not None:
            queryset = queryset.filter(created_at__gt=now - timedelta(days=oldest))
        return queryset


class ReviewQueueChangeList(RowLinksChangeList):
    """The queue's rows load only what their cells show: the tenant's name and the requester's
    username (no password hash), not the request's justification and decision. The review
    page and the bulk actions load whole rows (QuotaRequestAdmin.get_queryset)."""

    ROW_FIELDS = (
        "id", "status", "created_at", "ends_on", "tenant__name", "requested_by__username",
        "cluster_id",
    )

    def get_queryset(self, request, exclude_parameters=None):
        return (
            super()
            .get_queryset(request, exclude_parameters)
            .select_related(None)
            .select_related("tenant", "requested_by")
            .only(*self.ROW_FIELDS)
        )


@admin.register(QuotaRequest)
class QuotaRequestAdmin(RowCheckboxAdmin):
    list_display = [
        "number",
        "tenant_name",
        "asked",
        "status_badge",
        "requester",
        "age",
        "where",
        "ends_on",
    ]
    list_display_links = ["number"]
    list_filter = ["status", TenantSlugFilter, ResourceFilter, AgeFilter]
    search_fields = ["tenant__slug", "tenant__name", "requested_by__username", "justification"]
    ordering = ["created_at", "id"]
    actions = ["approve_selected", "reject_selected"]
    change_form_template = "tenants/admin/quota_request_review.html"
    list_per_page = 25
    # One COUNT(*) a page, of the requests the filters match: "N total" beside it counted every
    # request ever made (10,000 at fleet scale, growing) on every page of the queue.
    show_full_result_count = False
    # "Show all" serves every request awaiting review at fleet scale (400) on one page.
    list_max_show_all = 400

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("tenant", "requested_by", "decided_by")
            .prefetch_related("lines")
        )

    def get_changelist(self, request, **kwargs):
        return ReviewQueueChangeList

    def has_add_permission(self, request) -> bool:
        return False  # tenants ask in the portal

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # decisions stay on record

    def save_model(self, request, obj, form, change):
        # The change page is the review page: every decision goes through the services.
        raise PermissionDenied("Decide on a quota request from its review page.")

    @admin.display(description="#", ordering="id")
    def number(self, obj: QuotaRequest) -> str:
        return f"#{obj.pk}"

    @admin.display(description="tenant", ordering="tenant__name")
    def tenant_name(self, obj: QuotaRequest) -> str:
        return obj.tenant.name

    @admin.display(description="requested by", ordering="requested_by__username")
    def requester(self, obj: QuotaRequest) -> str | None:
        return obj.requested_by.username if obj.requested_by else None

    @admin.display(description="asked")
    def asked(self, obj: QuotaRequest) -> str:
        return format_html_join(
            ", ",
            "+{} {}",
            ((intcomma(line.amount), resource_label(line.resource)) for line in obj.lines.all()),
        )

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: QuotaRequest) -> str:
        return admin_badge(value=obj.status, label=obj.get_status_display(),
                           color=obj.status_color)

    @admin.display(description="age", ordering="created_at")
    def age(self, obj: QuotaRequest) -> str:
        days = (timezone.now() - obj.created_at).days
        return "today" if days == 0 else f"{days} d"

    @admin.display(description="where", ordering="cluster_id")
    def where(self, obj: QuotaRequest) -> str:
        return obj.where

    # -- the review page (replaces the change form) --

    def change_view(self, request, object_id, form_url="", extra_context=None):
        # get_object answers None for a missing or malformed id ("abc"): the admin's redirect.
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_view_or_change_permission(request, obj):
            raise PermissionDenied
        form = QuotaDecisionForm(request.POST or None, request=obj)
        amounts = {line.resource: line.amount for line in obj.lines.all()}
        if request.method == "POST" and form.is_valid():
            if "_preview" in request.POST:
                amounts = form.amounts()
            else:
                done = self._decide(request, obj, form)
                if done:
                    return HttpResponseRedirect(
                        reverse("admin:tenants_quotarequest_changelist")
                        + "?status__exact=submitted"
                    )
                amounts = form.amounts()
        decidable = obj.status == QuotaRequest.Status.SUBMITTED
        impact_rows = []
        if decidable:
            # Only an undecided request has something approving would do; a decided one shows
            # what its decision did, as recorded then (a recomputation would use the new quota).
            preview = {
                p.resource: p
                for p in quota_preview(tenant=obj.tenant, lines=list(amounts.items()),
                                       cluster=obj.cluster_id)
            }
            impact_rows = [
                {"p": preview[line.resource], "line": line, "field": field}
                for line, field in form.amount_fields()
                if line.resource in preview
            ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "preserved_filters": self.get_preserved_filters(request),
            "title": f"Review quota request #{obj.pk}",
            "original": obj,
            "quota_request": obj,
            "form": form,
            "impact_rows": impact_rows,
            "decision": None if decidable else quota_request_decision(request=obj),
            "quota_lines": tenant_quota_lines(tenant=obj.tenant),
            "history": obj.tenant.quota_requests.exclude(pk=obj.pk)
            .prefetch_related("lines")
            .order_by("-created_at")[:5],
            "decidable": decidable,
            "has_view_permission": True,
            **(extra_context or {}),
        }
        return TemplateResponse(request, self.change_form_template, context)

    def _decide(self, request, obj: QuotaRequest, form: QuotaDecisionForm) -> bool:
        note = form.cleaned_data.get("note", "")
        try:
            if "_reject" in request.POST:
                quota_requests.quota_request_reject(
                    request_id=obj.pk, approver=request.user, reason=note
                )
                self.message_user(request, f"Rejected quota request #{obj.pk}.")
            elif "_approve_changed" in request.POST:
                quota_requests.quota_request_approve(
                    request_id=obj.pk, approver=request.user, amounts=form.amounts(), note=note
                )
                self.message_user(
                    request,
                    f"Approved quota request #{obj.pk} with changed "
                    "amounts; it is being applied on the cluster.",
                )
            elif "_approve" in request.POST:
                quota_requests.quota_request_approve(
                    request_id=obj.pk, approver=request.user, note=note
                )
                self.message_user(
                    request,
                    f"Approved quota request #{obj.pk}; it is being applied on the cluster.",
                )
            else:
                return False
        except InvalidTransition:
            obj.refresh_from_db()
            self.message_user(
                request,
                f"Quota request #{obj.pk} is already {obj.get_status_display().lower()}: "
                "someone decided first.",
                messages.WARNING,
            )
            return True
        except ValidationError as exc:
            for name, errors in exc.message_dict.items():
                field = "note" if name in {"reason", "note"} else None
                form.add_error(field, errors)
            return False
        return True

    # -- bulk decisions --

    def _bulk_context(self, request, queryset: QuerySet[QuotaRequest], **extra) -> dict:
        # defer(None): whole rows again, not the changelist's few columns.
        selected = list(
            queryset.defer(None)
            .select_related("tenant")
            .prefetch_related("lines")
            .order_by("created_at", "id")
        )
        impact = quota_requests_impact(requests=selected)
        return {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "queryset": selected,
            "impact_rows": [{"p": p} for p in impact],
            "not_waiting": [r for r in selected if r.status != QuotaRequest.Status.SUBMITTED],
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            **extra,
        }

    @admin.action(description="Approve selected requests as asked (shows the impact first)")
    def approve_selected(self, request, queryset: QuerySet[QuotaRequest]):
        if "apply" not in request.POST:
            return TemplateResponse(
                request,
                "tenants/admin/quota_request_approve_selected.html",
                self._bulk_context(request, queryset, title="Approve quota requests"),
            )
        approved, skipped = [], []
        for obj in queryset.order_by("created_at"):
            try:
                quota_requests.quota_request_approve(request_id=obj.pk, approver=request.user)
                approved.append(obj.pk)
            except (InvalidTransition, ValidationError):
                skipped.append(obj.pk)
        if approved:
            self.message_user(request, f"Approved {len(approved)} request(s); they are being "
                                       "applied on the cluster.")
        if skipped:
            self.message_user(
                request,
                f"Skipped {len(skipped)} request(s) that were not waiting for a decision "
                "or whose end date has passed: " + ", ".join(f"#{pk}" for pk in skipped),
                messages.WARNING,
            )
        return None

    @admin.action(description="Reject selected requests (asks for a reason)")
    def reject_selected(self, request, queryset: QuerySet[QuotaRequest]):
        form = RejectForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            rejected, skipped = [], []
            for obj in queryset.order_by("created_at"):
                try:
                    quota_requests.quota_request_reject(
                        request_id=obj.pk,
                        approver=request.user,
                        reason=form.cleaned_data["reason"],
                    )
                    rejected.append(obj.pk)
                except InvalidTransition:
                    skipped.append(obj.pk)
            if rejected:
                self.message_user(request, f"Rejected {len(rejected)} request(s).")
            if skipped:
                self.message_user(
                    request,
                    f"Skipped {len(skipped)} request(s) not waiting for a decision.",
                    messages.WARNING,
                )
            return None
        return TemplateResponse(
            request,
            "tenants/admin/quota_request_reject_selected.html",
            self._bulk_context(request, queryset, title="Reject quota requests", form=form),
        )
