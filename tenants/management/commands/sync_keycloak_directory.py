"""`manage.py sync_keycloak_directory`: the periodic directory sync, run once by hand."""

from django.core.management.base import BaseCommand, CommandError

from tenants.identity.directory_sync import keycloak_directory_sync


class Command(BaseCommand):
    help = (
        "Reconcile Keycloak-sourced users with Keycloak's directory: memberships and roles, "
        "deactivation (and token revocation) of users disabled or deleted there."
    )

    def handle(self, *args, **options) -> None:
        result = keycloak_directory_sync()
        if not result.configured:
            self.stdout.write("Directory sync off: KEYCLOAK_DIRECTORY_CLIENT_ID is unset.")
            return
        if not result.ok:
            raise CommandError(f"Keycloak directory sync failed, nothing changed: {result.error}")
        deactivated = ", ".join(result.deactivated) or "none"
        self.stdout.write(
            f"{result.users} Keycloak users checked; deactivated: {deactivated}; "
            f"{result.tokens_revoked} API tokens revoked."
        )
