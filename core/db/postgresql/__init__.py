"""Django's PostgreSQL backend, with psycopg's own (compiled) timestamptz loader: see `base`."""
