"""Fixtures for the prometheus part of the suite (registered in tests/conftest.py)."""
