"""Billing's Celery tasks: thin interfaces that call one service each."""
