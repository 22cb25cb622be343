"""The tenants app's models, kept in its sub-domains; Django finds them through this module."""

from .access.models import Membership, RoleAssignment, ServiceAccount, Source, Tenant
from .credentials.models import ModelCredential
from .enforcement.models import TenantCluster
from .identity.models import DirectoryAnswer, DirectoryRead
from .quota.models import Quota, QuotaRequest, QuotaRequestLine, QuotaRequestStatus
from .webhooks.models import Webhook, WebhookDelivery
from .workloads.endpoint_keys import EndpointKey
from .workloads.models import IdleEpisode, IdlePolicy, Workload, WorkloadEvent, WorkloadStatus

__all__ = [
    "DirectoryAnswer",
    "DirectoryRead",
    "EndpointKey",
    "IdleEpisode",
    "IdlePolicy",
    "Membership",
    "ModelCredential",
    "Quota",
    "QuotaRequest",
    "QuotaRequestLine",
    "QuotaRequestStatus",
    "RoleAssignment",
    "ServiceAccount",
    "Source",
    "Tenant",
    "TenantCluster",
    "Webhook",
    "WebhookDelivery",
    "Workload",
    "WorkloadEvent",
    "WorkloadStatus",
]
