"""The REST API (Django REST framework) and its OpenAPI schema (drf-spectacular)."""

from .base import PRODUCTION, env

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "core.api.authentication.ApiTokenAuthentication",
        "tenants.identity.oidc.KeycloakBearerAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        # A scoped token (core.api.scopes) needs the scope the view declares.
        "core.api.scopes.TokenScopes",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "core.api.parsers.PortalJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "core.api.pagination.PortalPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "core.api.autoschema.PortalAutoSchema",
    "EXCEPTION_HANDLER": "core.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + ([] if PRODUCTION else ["rest_framework.renderers.BrowsableAPIRenderer"]),
    # Per signed-in user, and per anonymous client address (REMOTE_ADDR, or the address
    # TRUSTED_PROXY_COUNT proxies in front of the portal put into X-Forwarded-For): JSON 429.
    "DEFAULT_THROTTLE_CLASSES": [
        "core.api.throttling.PortalAnonThrottle",
        "core.api.throttling.PortalUserThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "user": env.str("API_THROTTLE_USER_RATE", default="6000/hour"),
        "anon": env.str("API_THROTTLE_ANON_RATE", default="600/hour"),
    },
    "NUM_PROXIES": env.int("TRUSTED_PROXY_COUNT", default=0),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "AI Factory Portal API",
    "DESCRIPTION": "Quota, workloads, inventory and billing of the shared GPU fleet.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.api.schema.document_error_responses",
        "core.api.schema.describe_tags",
    ],
}
# Choice sets of different models share field names (kind, role, source, state): name each.
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] = {
    "NodeStateEnum": "inventory.models.node.NodeState",
    "NodeRoleEnum": "inventory.models.node.NodeRole",
    "BiosProfileEnum": "inventory.models.node.BiosProfile",
    "GpuSharingEnum": "inventory.models.node.GpuSharing",
    "ValidationKindEnum": "inventory.models.node.ValidationKind",
    "GpuHealthEnum": "inventory.models.device.GpuHealth",
    "NicKindEnum": "inventory.models.device.NicKind",
    "HealthEventKindEnum": "inventory.models.health.HealthEventKind",
    "HealthEventSourceEnum": "inventory.models.health.HealthEventSource",
    "HealthEventRemediationEnum": "inventory.models.health.HealthEventRemediation",
    "SeverityEnum": "inventory.models.health.Severity",
    "MembershipRoleEnum": "tenants.access.models.Membership.Role",
    "MembershipSourceEnum": "tenants.access.models.Source",
    "QuotaRequestStatusEnum": "tenants.quota.models.QuotaRequestStatus",
    "TenantIsolationEnum": "tenants.access.models.Tenant.Isolation",
    "TenantStatusEnum": "tenants.access.models.Tenant.Status",
    "WorkloadStatusEnum": "tenants.workloads.models.WorkloadStatus",
    "WorkloadKindEnum": "tenants.workloads.registry.CHOICES",
    "WorkloadEventKindEnum": "tenants.workloads.models.WorkloadEvent.Kind",
    "WorkloadPowerActionEnum": "tenants.workloads.kinds.vm.spec.POWER_ACTIONS",
    "ModelCredentialKindEnum": "tenants.credentials.models.ModelCredential.Kind",
    "ReconcileStateEnum": "core.reconcile.ReconcileState",
    "TokenScopeEnum": "core.api.scopes.Scope",
    "ServiceAccountRoleEnum": "tenants.access.models.ServiceAccount.ROLES",
}
# Billing's invoice API (finance): the invoice's status.
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]["InvoiceStatusEnum"] = "billing.models.InvoiceStatus"
# Webhooks: their format, the events (those a hook hears about; those a delivery carries) and a
# delivery's state.
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] |= {
    "WebhookFormatEnum": "tenants.webhooks.models.Webhook.Format",
    "WebhookDeliveryStatusEnum": "tenants.webhooks.models.DeliveryStatus",
    "WebhookEventTypeEnum": "tenants.webhooks.models.EventType",
    "WebhookSubscribedEventEnum": "tenants.webhooks.models.SUBSCRIBABLE",
}
