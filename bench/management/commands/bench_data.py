import datetime

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from bench import dataset


class Command(BaseCommand):
    help = (
        "Generate the fleet-scale benchmark data set (issue 13) on PostgreSQL with COPY: "
        "deterministic for a scale, seed and anchor month. Refuses a non-empty database "
        "unless --reset (which flushes it first)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--scale", type=float, default=1.0,
                            help="1 is the fleet of issue 13 (2,000 nodes, 2,000 tenants, …).")
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--anchor", type=datetime.date.fromisoformat, default=None,
                            help="First day of the month the data leads up to "
                                 "(default: the current month).")
        parser.add_argument("--reset", action="store_true",
                            help="Flush the database first (every table, every row).")

    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("The benchmark data is not for production (PORTAL_ENV).")
        if connection.vendor != "postgresql":
            raise CommandError("The benchmark data set needs PostgreSQL (DATABASE_URL).")
        if options["scale"] <= 0:
            raise CommandError("--scale must be positive.")
        if not dataset.database_is_empty():
            if not options["reset"]:
                raise CommandError(
                    f"The database {connection.settings_dict['NAME']} is not empty: "
                    "use --reset to flush it first."
                )
            call_command("flush", interactive=False, verbosity=0)
        anchor = options["anchor"]
        if anchor is not None:
            anchor = datetime.datetime(anchor.year, anchor.month, 1, tzinfo=datetime.UTC)
        self.stdout.write(f"Writing the benchmark data set at scale {options['scale']}:")
        summary = dataset.generate(
            scale=options["scale"], seed=options["seed"], anchor=anchor, log=self.stdout.write
        )
        total = sum(summary["rows"].values())
        self.stdout.write(self.style.SUCCESS(
            f"{total:,} rows in {summary['total_seconds']:.1f} s."
        ))
