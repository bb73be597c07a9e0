# Vault on Nomad; the old image is kept below for rollback notes.
job "vault" {
  datacenters = ["dc1"]

  group "vault" {
    count = 3

    task "vault" {
      driver = "docker"

      config {
        # image = "hashicorp/vault:1.16.0"
        image = "hashicorp/vault:1.17.2" # pinned by the platform team
        args  = ["server", "-config=/local/vault.hcl"]
      }

      template {
        data        = "VERSION=1.17.2"
        destination = "local/env"
      }
    }

    task "agent" {
      driver = "docker"
      config {
        image = "docker.io/library/busybox:1.17.2"
      }
    }
  }
}
