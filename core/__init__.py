"""The portal's infrastructure, which knows no domain: the fleet gateway, the outbox, queueing,
reconciliation, state machines, data stamps and the cache's names, audit, errors, the API's base
classes. It imports no app (an import contract says so); the apps build on it.

Its Django app keeps the label "portal" (core.apps.CoreConfig): its tables, migrations and
permissions are named as they were when it lived in portal/.
"""
