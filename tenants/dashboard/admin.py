"""Django admin for tenants, their members, their service accounts' Keycloak clients and
platform roles.

Every write goes through a service (audit event, reconcile after commit); the admin only parses
input.
"""

from django.contrib import admin
from django.db.models import QuerySet
from django.utils.html import format_html

from core.admin_filters import DistinctValuesListFilter, RelatedByNameListFilter
from core.admin_lists import RowCheckboxAdmin, RowLinksChangeList
from core.choices import admin_badge

from ..access import service_accounts, services
from ..access.changes import tenant_mark_changed
from ..access.models import Membership, RoleAssignment, ServiceAccount, Tenant
from ..quota import services as quota_services
from ..quota.admin import QuotaInline
from ..quota.models import Quota


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]
    fields = ["user", "role", "source"]


class TenantChangeList(RowLinksChangeList):
    """The list's rows load only what their cells show: not the manifests last applied (a JSON
    document per tenant, the largest column by far) nor the rest of the cluster bookkeeping.
    The change page and the action load whole rows."""

    ROW_FIELDS = (
        "id", "name", "slug", "isolation", "status", "cohort", "cost_center",
        # the cluster column (Reconciled.reconcile_state)
        "reconcile_error", "applied_version", "desired_version",
    )

    def get_queryset(self, request, exclude_parameters=None):
        return super().get_queryset(request, exclude_parameters).only(*self.ROW_FIELDS)


@admin.register(Tenant)
class TenantAdmin(RowCheckboxAdmin):
    list_display = [
        "name",
        "slug",
        "isolation",
        "status",
        "cohort",
        "cost_center",
        "cluster",
    ]
    # The cohorts there are (17 among 2,000 tenants at fleet scale), read one index probe each.
    list_filter = ["isolation", "status", ("cohort", DistinctValuesListFilter)]
    search_fields = ["name", "slug", "cost_center"]
    # 2,000 tenants at fleet scale: a page a screen or two long, and one COUNT(*) per request
    # (the filtered count; "N total" beside it would be a second scan of the table).
    list_per_page = 50
    show_full_result_count = False
    inlines = [MembershipInline, QuotaInline]
    actions = ["reconcile_selected"]
    readonly_fields = [
        "applied_at",
        "applied_version",
        "desired_version",
        "reconcile_error",
        "reconcile_failed_at",
        "reconcile_failures",
    ]
    fieldsets = [
        (None, {"fields": ["slug", "name", "cost_center", "status"]}),
        ("Isolation", {"fields": ["isolation", "cohort", "lends_reserved_gpus", "keycloak_group"]}),
        ("Notebooks", {"fields": ["custom_notebook_images"]}),
        (
            "On the cluster",
            {
                "fields": [
                    "applied_at",
                    "applied_version",
                    "desired_version",
                    "reconcile_error",
                    "reconcile_failed_at",
                    "reconcile_failures",
                ]
            },
        ),
    ]

    def get_changelist(self, request, **kwargs):
        return TenantChangeList

    def has_delete_permission(self, request, obj=None) -> bool:
        # Deleting would orphan the namespace and queues on the cluster: suspend instead.
        return False

    def get_readonly_fields(self, request, obj=None):
        # The slug names the namespace and the queues; a LocalQueue's clusterQueue is immutable.
        return [*self.readonly_fields, "slug"] if obj else self.readonly_fields

    @admin.display(description="cluster")
    def cluster(self, tenant: Tenant) -> str:
        badge = admin_badge(value=tenant.reconcile_state, label=tenant.reconcile_state_label,
                            color=tenant.reconcile_state_color)
        if tenant.reconcile_error:
            return format_html("{} {}", badge, tenant.reconcile_error[:80])
        return badge

    def save_model(self, request, obj, form, change):
        if change:
            services.tenant_update(actor=request.user, tenant=obj, changed=form.changed_data)
        else:
            services.tenant_add(actor=request.user, tenant=obj)

    def save_formset(self, request, form, formset, change):
        tenant = form.instance
        if formset.model is Quota:
            formset.save(commit=False)
            for obj in formset.deleted_objects:
                quota_services.quota_remove(actor=request.user, quota=obj)
            for inline_form in formset.forms:
                if inline_form in formset.deleted_forms or not inline_form.has_changed():
                    continue
                data = inline_form.cleaned_data
                if not data.get("resource"):
                    continue
                moved = {"cluster", "resource"} & set(inline_form.changed_data)
                if inline_form.instance.pk and moved:  # the grant moved: the old one goes
                    old = Quota.objects.get(pk=inline_form.instance.pk)
                    quota_services.quota_remove(actor=request.user, quota=old)
                quota_services.quota_set(
                    actor=request.user,
                    tenant=tenant,
                    cluster=data["cluster"].slug if data.get("cluster") else None,
                    resource=data["resource"],
                    limit=data["limit"],
                    borrowing_limit=data.get("borrowing_limit"),
                    lending_limit=data.get("lending_limit"),
                )
        elif formset.model is Membership:
            formset.save(commit=False)
            for obj in formset.deleted_objects:
                services.membership_remove(actor=request.user, membership=obj)
            for obj in [*formset.new_objects, *(o for o, _ in formset.changed_objects)]:
                services.membership_set(
                    actor=request.user,
                    tenant=tenant,
                    user=obj.user,
                    role=obj.role,
                    source=obj.source,
                )
        else:  # pragma: no cover - no other inlines
            formset.save()

    @admin.action(description="Apply on the cluster now")
    def reconcile_selected(self, request, queryset: QuerySet[Tenant]) -> None:
        tenants = list(queryset.defer(None))  # whole rows, not the list's few columns
        tenant_mark_changed(tenants=tenants)
        self.message_user(request, f"Queued {len(tenants)} tenant(s) for the cluster.")


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    """Memberships granted in the portal; each save or delete goes through the services (audit
    event, the user's access forgotten). A membership from Keycloak is changed in Keycloak."""

    list_display = ["user", "tenant", "role", "source", "created_at"]
    list_filter = ["role", "source", ("tenant", RelatedByNameListFilter)]
    search_fields = ["user__username", "user__email", "tenant__slug"]
    list_select_related = ["user", "tenant"]
    autocomplete_fields = ["user"]
    fields = ["user", "tenant", "role", "source"]

    def get_readonly_fields(self, request, obj=None):
        # Moving a membership to another user or tenant is a removal and a new membership.
        return ["user", "tenant", "source"] if obj else ["source"]

    def save_model(self, request, obj, form, change):
        saved = services.membership_set(
            actor=request.user, tenant=obj.tenant, user=obj.user, role=obj.role, source=obj.source
        )
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        services.membership_remove(actor=request.user, membership=obj)

    def delete_queryset(self, request, queryset):
        for membership in queryset.select_related("user", "tenant"):
            services.membership_remove(actor=request.user, membership=membership)


@admin.register(RoleAssignment)
class RoleAssignmentAdmin(admin.ModelAdmin):
    """Platform roles (platform admin, finance): granted and revoked through the services, so
    that making someone a platform admin leaves an audit event naming who did it."""

    list_display = ["user", "role", "source", "created_at"]
    list_filter = ["role", "source"]
    search_fields = ["user__username"]
    list_select_related = ["user"]
    autocomplete_fields = ["user"]
    fields = ["user", "role"]

    def has_change_permission(self, request, obj=None) -> bool:
        # A role is held or not: grant another one, or revoke this one.
        return False if obj is not None else super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change):
        saved = services.role_grant(actor=request.user, user=obj.user, role=obj.role)
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        services.role_revoke(actor=request.user, assignment=obj)

    def delete_queryset(self, request, queryset):
        for assignment in queryset.select_related("user"):
            services.role_revoke(actor=request.user, assignment=assignment)


@admin.register(ServiceAccount)
class ServiceAccountAdmin(admin.ModelAdmin):
    """Where platform admins link a service account to a Keycloak client (its client-credentials
    tokens then act as the account), through the service: audited in the tenant's trail.
    Tenant owners create, disable and delete service accounts on the tenant's page."""

    list_display = ["name", "tenant", "role", "disabled", "keycloak_client_id"]
    list_filter = ["role", ("tenant", RelatedByNameListFilter)]
    search_fields = ["name", "tenant__slug", "keycloak_client_id"]
    list_select_related = ["tenant"]
    fields = ["tenant", "name", "user", "role", "scopes", "keycloak_client_id",
              "keycloak_last_used_at", "created_by", "created_at", "disabled_at"]
    readonly_fields = [f for f in fields if f != "keycloak_client_id"]

    @admin.display(boolean=True, description="disabled", ordering="disabled_at")
    def disabled(self, obj: ServiceAccount) -> bool:
        return obj.disabled_at is not None

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change):
        service_accounts.service_account_update(
            actor=request.user, account=obj, keycloak_client_id=obj.keycloak_client_id,
            change_client_id=True,
        )
