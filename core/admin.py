from axes import admin as axes_admin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import Group
from django_celery_beat import admin as beat_admin
from django_celery_beat.models import (
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)

from . import outbox, tokens, users
from .admin_filters import DistinctValuesListFilter
from .models import ApiToken, AuditEvent, OidcIdentity, OutboxEmail, SimulatedObject


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """Shown to platform admins, changed only by the code that owns it (never by a form)."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyModelAdmin):
    list_display = [
        "created_at",
        "actor_repr",
        "action",
        "object_type",
        "object_repr",
        "tenant_slug",
        "request_id",
    ]
    # The values each column holds, read a value at a time from its index: the trail only grows.
    list_filter = [
        ("action", DistinctValuesListFilter),
        ("object_type", DistinctValuesListFilter),
        ("tenant_slug", DistinctValuesListFilter),
        "created_at",
    ]
    search_fields = [
        "actor_repr",
        "action",
        "object_repr",
        "object_id",
        "tenant_slug",
        "request_id",
    ]
    date_hierarchy = "created_at"
    list_select_related = ["actor"]
    # One count of the events the filters match, not a second of the whole trail beside it.
    show_full_result_count = False

    # The audit trail is append-only: nobody edits or deletes it from the admin.


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyModelAdmin):
    """Personal API tokens: their owners create them; an admin revokes one (audited)."""

    list_display = ["name", "user", "hint", "scopes", "created_at", "last_used_at", "expires_at",
                    "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "user__username", "hint"]
    list_select_related = ["user"]
    actions = ["revoke_selected"]

    @admin.action(description="Revoke the selected tokens (they stop working at once)")
    def revoke_selected(self, request, queryset) -> None:
        live = list(queryset.filter(revoked_at__isnull=True).select_related("user"))
        for token in live:
            tokens.api_token_revoke(token=token, actor=request.user)
        self.message_user(request, f"Revoked {len(live)} token(s).", messages.SUCCESS)



@admin.register(OidcIdentity)
class OidcIdentityAdmin(ReadOnlyModelAdmin):
    """Who signs in through Keycloak as whom; created at the first sign-in, read-only here."""

    list_display = ["user", "subject", "issuer", "created_at", "last_seen_at"]
    search_fields = ["user__username", "user__email", "subject"]
    list_select_related = ["user"]


@admin.register(SimulatedObject)
class SimulatedObjectAdmin(ReadOnlyModelAdmin):
    """The demo cluster's objects, as the simulated fleet keeps them (changed by the portal)."""

    list_display = ["kind", "namespace", "name", "api_version", "updated_at"]
    list_filter = ["kind", "api_version"]
    search_fields = ["name", "namespace"]


@admin.register(OutboxEmail)
class OutboxEmailAdmin(ReadOnlyModelAdmin):
    """Mail the portal owes people: what went, what waits and why (read-only)."""

    list_display = ["created_at", "topic", "subject", "recipients", "sent_at", "attempts",
                    "last_error"]
    list_filter = [("sent_at", admin.EmptyFieldListFilter), "topic", "created_at"]
    search_fields = ["subject", "topic", "to"]
    date_hierarchy = "created_at"
    actions = ["send_now"]

    @admin.display(description="to")
    def recipients(self, obj: OutboxEmail) -> str:
        return ", ".join(obj.to)

    @admin.action(description="Try sending the selected unsent mails now")
    def send_now(self, request, queryset) -> None:
        ids = list(queryset.filter(sent_at__isnull=True).values_list("pk", flat=True))
        sent = sum(outbox.outbox_send(email_id=pk) for pk in ids)
        level = messages.SUCCESS if sent == len(ids) else messages.WARNING
        self.message_user(request, f"{sent} of {len(ids)} unsent mails sent.", level)



# --- the admins of the libraries the portal uses ----------------------------------------------
# Re-registered so that nothing changes through Django admin without an audit event: accounts
# save through core.users; lock-outs are lifted through it; the logs and the beat schedule
# (which comes from the settings) are read-only. Django's groups and permissions are not used:
# platform roles are RoleAssignments.

User = get_user_model()
for _registered in (User, Group, AccessAttempt, AccessLog, AccessFailureLog, PeriodicTask,
                    ClockedSchedule, CrontabSchedule, SolarSchedule, IntervalSchedule):
    if admin.site.is_registered(_registered):
        admin.site.unregister(_registered)


@admin.register(User)
class PortalUserAdmin(UserAdmin):
    fieldsets = [
        (None, {"fields": ["username", "password"]}),
        ("Personal info", {"fields": ["first_name", "last_name", "email"]}),
        ("Status", {"fields": ["is_active", "is_superuser"],
                    "description": "A superuser is a platform admin; prefer the Platform admin "
                                   "role (Role assignments), or the Keycloak role."}),
        ("Dates", {"fields": ["last_login", "date_joined"]}),
    ]
    readonly_fields = ["last_login", "date_joined"]
    list_filter = ["is_active", "is_superuser"]

    def save_model(self, request, obj, form, change):
        users.user_save(actor=request.user, user=obj, changed=form.changed_data)

    def delete_model(self, request, obj):
        users.user_delete(actor=request.user, user=obj)

    def delete_queryset(self, request, queryset):
        for user in queryset:
            users.user_delete(actor=request.user, user=user)

    def user_change_password(self, request, id, form_url=""):
        response = super().user_change_password(request, id, form_url)
        if request.method == "POST" and response.status_code == 302:
            users.user_save(actor=request.user, user=User.objects.get(pk=id), changed=["password"])
        return response


@admin.register(AccessAttempt)
class LockoutAdmin(axes_admin.AccessAttemptAdmin):
    """Failed sign-ins and lock-outs; deleting an attempt lifts its lock-out (audited)."""

    actions = []

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def delete_model(self, request, obj):
        users.lockouts_clear(actor=request.user, attempts=[obj])

    def delete_queryset(self, request, queryset):
        users.lockouts_clear(actor=request.user, attempts=list(queryset))


@admin.register(AccessLog)
class AccessLogAdmin(ReadOnlyModelAdmin, axes_admin.AccessLogAdmin):
    pass


@admin.register(AccessFailureLog)
class AccessFailureLogAdmin(ReadOnlyModelAdmin, axes_admin.AccessFailureLogAdmin):
    pass


@admin.register(PeriodicTask)
class PeriodicTaskAdmin(ReadOnlyModelAdmin, beat_admin.PeriodicTaskAdmin):
    """The beat schedule, from the settings: shown here, and a task can be run now."""

    actions = ["run_tasks"]


for _model, _base in [
    (ClockedSchedule, beat_admin.ClockedScheduleAdmin),
    (CrontabSchedule, beat_admin.CrontabScheduleAdmin),
    (SolarSchedule, beat_admin.SolarScheduleAdmin),
    (IntervalSchedule, beat_admin.IntervalScheduleAdmin),
]:
    admin.site.register(_model, type(_base.__name__, (ReadOnlyModelAdmin, _base), {"inlines": []}))
