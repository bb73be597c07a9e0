"""Run the in-cluster agent: read this cluster as a poll would, push each snapshot to the portal.

    python manage.py agent --cluster prod-eu-1 --portal https://portal.example.com

The agent token (created by an admin on the portal's Clusters page, shown once) comes from the
environment variable named by --token-env (PORTAL_AGENT_TOKEN by default). By default the
cluster is read with the pod's service account; --kubeconfig/--context or --api-url (with
--api-token-env) read another way, for running the agent outside the cluster. It needs no
database: it only reads its cluster and talks HTTPS to the portal.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from gitops.sources.agent import Agent, AgentStopped
from gitops.sources.kube import KubeSource
from portal.kernel.credentials import named_secret


class Command(BaseCommand):
    help = "Read this cluster as a poll would and push each snapshot to the portal (an in-cluster agent)."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True, help="the cluster's name in the portal")
        parser.add_argument("--portal", required=True, help="the portal's base URL, e.g. https://portal.example.com")
        parser.add_argument("--token-env", default="PORTAL_AGENT_TOKEN",
                            help="environment variable holding the agent token [PORTAL_AGENT_TOKEN]")
        parser.add_argument("--interval", type=float, default=float(settings.PORTAL_POLL_INTERVAL),
                            help="seconds between reads [PORTAL_POLL_INTERVAL]")
        parser.add_argument("--kubeconfig", help="read through a kubeconfig instead of the service account")
        parser.add_argument("--context", help="kubeconfig context")
        parser.add_argument("--api-url", help="read through an API URL with a bearer token")
        parser.add_argument("--api-token-env", help="environment variable holding the --api-url token")
        parser.add_argument("--ca-file", help="CA bundle that signed the portal's certificate")
        parser.add_argument("--argocd-namespace", default="argocd",
                            help="Argo CD's namespace here, as the portal's Argo CD instance names it [argocd]")
        parser.add_argument("--once", action="store_true", help="read and push once, then exit")
        parser.add_argument("--heartbeat-file", default=settings.PORTAL_AGENT_HEARTBEAT_FILE,
                            help="a file touched each time the loop turns, for a liveness probe "
                                 "[PORTAL_AGENT_HEARTBEAT_FILE]")

    def handle(self, *args, **options):
        token = named_secret(options["token_env"])
        if not token:
            raise CommandError(f"no agent token: set {options['token_env']} (an admin creates one on Clusters)")
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

        def source() -> KubeSource:
            if options["api_url"]:
                api_token = named_secret(options["api_token_env"] or "")
                return KubeSource.from_url(options["api_url"], api_token, name=options["cluster"])
            if options["kubeconfig"] or options["context"]:
                return KubeSource.from_kubeconfig(options["kubeconfig"], options["context"], name=options["cluster"])
            return KubeSource.in_cluster(name=options["cluster"])

        agent = Agent(options["cluster"], options["portal"], token, source, interval=options["interval"],
                      verify=options["ca_file"] or True, argocd_namespace=options["argocd_namespace"],
                      alive=_toucher(options["heartbeat_file"]))
        try:
            agent.run(iterations=1 if options["once"] else None)
        except AgentStopped as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            pass
        self.stdout.write(f"{options['cluster']}: {agent.pushed} snapshot(s) stored by the portal")


def _toucher(path: str):
    """The agent's liveness signal: the chart's exec probe checks the file's age."""
    if not path:
        return None
    heartbeat = Path(path)
    return heartbeat.touch
