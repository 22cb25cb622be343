from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from demo.data import load_demo

CONSOLE_MAIL = "django.core.mail.backends.console.EmailBackend"
FILE_MAIL = "django.core.mail.backends.filebased.EmailBackend"


class Command(BaseCommand):
    help = "Load the demo fleet, tenants, quotas and one account per role (idempotent)."

    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("The demo data is not for production (PORTAL_ENV=production).")
        # The mail the demo's story sends (quota decisions, invoices…) would otherwise scroll
        # the accounts off the screen: while loading, the console's mail goes to files.
        mail_dir = None
        if settings.EMAIL_BACKEND == CONSOLE_MAIL:
            mail_dir = Path(settings.BASE_DIR) / "artifacts" / "demo-mail"
            mail_dir.mkdir(parents=True, exist_ok=True)
            settings.EMAIL_BACKEND, settings.EMAIL_FILE_PATH = FILE_MAIL, str(mail_dir)
        try:
            accounts = load_demo()
        finally:
            if mail_dir is not None:
                settings.EMAIL_BACKEND = CONSOLE_MAIL
        if mail_dir is not None and any(mail_dir.iterdir()):
            self.stdout.write(f"The e-mails the demo sent while loading are in {mail_dir}/.")
        self.stdout.write(self.style.SUCCESS("Demo data is loaded. Sign in with:"))
        width = max(len(a.username) for a in accounts)
        for account in accounts:
            self.stdout.write(
                f"  {account.username:<{width}}  password {account.password:<20}  {account.role}"
            )
        self.stdout.write(f"The portal: {settings.PORTAL_URL}/")
