"""Fixtures for the oidc part of the suite (registered in tests/conftest.py)."""
