"""Model credentials: secrets a tenant keeps in the portal (a Hugging Face token, S3 keys) so
that its inference endpoints can load gated and private models. Write-only, sealed at rest,
synced as Kubernetes Secrets into the tenant's namespace (docs/workloads.md)."""
