"""Reads about the fleet: a fixed number of queries each, whatever the fleet's size.

`fleet` — overview numbers; `nodes` — the node list, detail and rack views; `capacity` — GPU
capacity per resource class (the inventory's part of `tenants.quota.capacity`).
Node and rack reads are for platform admins: the interfaces check the role before calling.
"""
