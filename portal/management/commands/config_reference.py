from django.conf import settings
from django.core.management.base import BaseCommand

from portal import config_reference


class Command(BaseCommand):
    help = (
        "Write docs/configuration.md's table of environment variables and .env.example from "
        "their declarations in portal/config_vars.py."
    )

    def handle(self, *args, **options) -> None:
        for path, text in config_reference.written_files(settings.BASE_DIR).items():
            if path.read_text() != text:
                path.write_text(text)
                self.stdout.write(f"Wrote {path.relative_to(settings.BASE_DIR)}")
