"""Settings for the AI Factory Portal, read from the environment only.

Defaults give the embedded demo (SQLite, eager Celery, simulated fleet, local accounts).
`PORTAL_ENV=production` turns on the production posture (`production`) and refuses to start
without SECRET_KEY and ALLOWED_HOSTS. One module per concern: `base` (Django, database, cache,
Celery, logging), `identity`, `fleet`, `billing`, `api`; the test suite runs on `test`. Every
variable read here is declared in portal/config_vars.py, from which docs/configuration.md's table
and .env.example are written (manage.py config_reference).
"""

from .api import *  # noqa: F403
from .base import *  # noqa: F403
from .base import PRODUCTION
from .billing import *  # noqa: F403
from .fleet import *  # noqa: F403
from .identity import *  # noqa: F403

if PRODUCTION:
    from .production import *  # noqa: F403
