from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = "Billing"

    def ready(self) -> None:
        from tenants.quota import pricing

        from .quotes import quoted_price

        # Tenants, below billing, quote a quota request's price through this.
        pricing.install(quoted_price)
