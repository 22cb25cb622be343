"""Writes about the fleet: each in one transaction, each leaving an audit event.

`lifecycle` moves nodes through their states; `cluster` carries those moves out on the cluster
(cordon, drain); `sync` reads the cluster into the inventory; `health` turns DCGM signals into
health events and remediation; `transfer` imports and exports; `notifications` tells tenants;
`records` saves what admins edit (sites, racks, nodes' details).
"""
