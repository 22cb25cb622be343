"""Workloads: what tenants run on the fleet (vClusters, inference endpoints, VMs, Slurm)."""
