"""`manage.py reseal_model_credentials`: seal the stored model credentials with the first of
SEALING_KEYS, the middle step of a key rotation (docs/workloads.md, "Model credentials")."""

from django.core.management.base import BaseCommand, CommandError

from core.sealed import InvalidToken
from tenants.credentials.services import credentials_reseal


class Command(BaseCommand):
    help = (
        "Re-seal every model credential's values with the first key of SEALING_KEYS (put the "
        "new key first, run this, then drop the old key)."
    )

    def handle(self, *args, **options) -> None:
        try:
            count = credentials_reseal()
        except InvalidToken:
            raise CommandError("A credential opens with none of SEALING_KEYS: nothing was "
                               "changed. Keep the old key listed until every one is resealed."
                               ) from None
        self.stdout.write(f"{count} model credentials resealed with the first sealing key.")
