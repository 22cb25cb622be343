"""Each tenant's objects on the cluster (namespace, quota, Kueue queues), level-triggered."""
