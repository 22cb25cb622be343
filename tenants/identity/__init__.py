"""Sign-in with Keycloak: OIDC claims to roles and memberships, and the directory sync."""
