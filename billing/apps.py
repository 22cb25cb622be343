from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = "Billing"

    def ready(self) -> None:
        from core.metrics import register_collector
        from tenants.quota import pricing

        from .quotes import quoted_price
        from .selectors.metering_metrics import MeteringLastHourCollector

        # Tenants, below billing, quote a quota request's price through this.
        pricing.install(quoted_price)
        # /metrics says when metering last recorded an hour (core knows no billing).
        register_collector(MeteringLastHourCollector())
