from django.contrib import admin, messages

from . import outbox
from .models import ApiToken, AuditEvent, OidcIdentity, OutboxEmail, SimulatedObject


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "actor_repr",
        "action",
        "object_type",
        "object_repr",
        "tenant_slug",
        "request_id",
    ]
    list_filter = ["action", "object_type", "tenant_slug", "created_at"]
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

    # The audit trail is append-only: nobody edits or deletes it from the admin.
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "hint", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "hint"]
    readonly_fields = ["digest", "hint", "created_at", "last_used_at"]
    list_select_related = ["user"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """Who signs in through Keycloak as whom; created at the first sign-in, read-only here."""

    list_display = ["user", "subject", "issuer", "created_at", "last_seen_at"]
    search_fields = ["user__username", "user__email", "subject"]
    readonly_fields = ["user", "subject", "issuer", "created_at", "last_seen_at"]
    list_select_related = ["user"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(SimulatedObject)
class SimulatedObjectAdmin(admin.ModelAdmin):
    list_display = ["kind", "namespace", "name", "api_version", "updated_at"]
    list_filter = ["kind", "api_version"]
    search_fields = ["name", "namespace"]


@admin.register(OutboxEmail)
class OutboxEmailAdmin(admin.ModelAdmin):
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

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
