from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.demo import load_demo


class Command(BaseCommand):
    help = "Load the demo fleet, tenants, quotas and one account per role (idempotent)."

    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("The demo data is not for production (PORTAL_ENV=production).")
        accounts = load_demo()
        self.stdout.write(self.style.SUCCESS("Demo data is loaded. Sign in with:"))
        width = max(len(a.username) for a in accounts)
        for account in accounts:
            self.stdout.write(
                f"  {account.username:<{width}}  password {account.password:<20}  {account.role}"
            )
