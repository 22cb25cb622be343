"""Fixtures for the browser part of the suite (registered in tests/conftest.py)."""
