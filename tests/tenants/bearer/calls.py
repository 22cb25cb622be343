"""/api/v1/me/ asked with a bearer token: what the bearer-token tests call."""

from rest_framework.test import APIClient


def me(client: APIClient, token: str):
    return client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {token}")
