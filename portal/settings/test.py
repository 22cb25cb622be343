"""The test suite's settings: the portal's, with a fast password hasher (the suite creates
thousands of accounts; how passwords are hashed is Django's and not under test)."""

from portal.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
