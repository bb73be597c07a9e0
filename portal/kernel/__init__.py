"""The kernel: what every layer of the portal stands on.

The catalog (environments, clusters, services, teams), accounts (roles, tokens), the audit
trail, links (safe outside links and the portal's own URLs for the layers below the pages),
timestamps, image references, redaction, claims on queued work and the one lookup of a
cluster's credentials. The kernel imports nothing of the portal above it.
"""
