"""The demo's model credentials: a token nova keeps, which its gated endpoint loads with
(`demo.data.WORKLOADS`, `llama-3b-gated`; the simulated KServe's `GATED_MODELS`)."""

from django.conf import settings

from tenants.credentials import services as credential_services
from tenants.models import Tenant

# Model credentials the demo's tenants keep (tenant, who stored it, name, kind, values): the
# values are made up; the simulated KServe only checks that a gated model got a token.
CREDENTIALS = (
    ("nova", "mike", "hf-token", "huggingface",
     {"token": "hf_demoTokenNotARealOne0000000000000"}),
)


def load_model_credentials(users: dict) -> None:
    """Store the demo's credentials and put their Secrets on the simulated fleet."""
    for slug, who, name, kind, values in CREDENTIALS:
        tenant = Tenant.objects.get(slug=slug)
        if not tenant.model_credentials.filter(name=name).exists():
            credential_services.credential_create(actor=users[who], tenant=tenant, name=name,
                                                  kind=kind, values=values)
        if settings.FLEET_BACKEND == "simulated":
            credential_services.credentials_reconcile(tenant_id=tenant.pk)
