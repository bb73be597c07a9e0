"""The discipline rules as people read them: title, why it matters, what to change, a YAML
example of the change, and how much it matters.

One entry per rule id, whichever module judges it (portal.findings.discipline for the app,
project, Git and notification rules; portal.findings.practices for the ones read from the
objects' specs and the workloads they run). Pages, the API and MCP read `RULES` (re-exported
by portal.findings.discipline, where callers have always found it), so the words live once.
"""

from __future__ import annotations

from dataclasses import dataclass

HIGH, MEDIUM, LOW = "high", "medium", "low"
SEVERITIES = (HIGH, MEDIUM, LOW)  # worst first


@dataclass(frozen=True)
class FindingRule:
    id: str
    title: str
    principle: str  # why it matters, in one line
    fix: str  # what to change
    example: str  # the change, as YAML a reviewer can paste
    severity: str  # one of SEVERITIES


@dataclass(frozen=True)
class Found:
    rule: str
    message: str  # what is wrong with this object, naming it

    @property
    def fix(self) -> str:
        return RULES[self.rule].fix


_RULE_LIST = (
    FindingRule(
        "self-heal-off", "Automated production app without selfHeal",
        "Git is the truth only if drift is undone: without selfHeal a hand change stays in production.",
        "Set spec.syncPolicy.automated.selfHeal: true on the Application.",
        "spec:\n  syncPolicy:\n    automated:\n      selfHeal: true\n",
        MEDIUM,
    ),
    FindingRule(
        "project-any-destination", "Production AppProject allows any server and namespace",
        "A project is a blast-radius boundary: one that allows every destination bounds nothing.",
        "List the servers and namespaces the project's apps deploy to in spec.destinations instead of '*'.",
        "spec:\n  destinations:\n    - server: https://prod.example.internal\n      namespace: checkout\n",
        HIGH,
    ),
    FindingRule(
        "default-project", "Production app in the default project",
        "The default project allows everything and belongs to no team: production needs its own boundary.",
        "Move the Application to a project of its own team (spec.project) that allows only its destinations.",
        "spec:\n  project: team-checkout\n",
        MEDIUM,
    ),
    FindingRule(
        "no-failure-notification", "Notifications: no rule",
        "A deploy that fails silently is found by its users: every sync failure must reach someone.",
        "Add a portal notification rule for the environment (Notifications); or, per app, Argo CD: annotate "
        "notifications.argoproj.io/subscribe.on-sync-failed.<service>; Flux: add an Alert whose eventSources "
        "name the object.",
        "metadata:\n  annotations:\n    notifications.argoproj.io/subscribe.on-sync-failed.slack: deploys\n",
        MEDIUM,
    ),
    FindingRule(
        "chart-unpinned", "HelmRelease chart version not pinned",
        "A range or '*' deploys whatever the chart repository publishes next, not what was reviewed in Git.",
        "Pin spec.chart.spec.version to one exact version and raise it by a pull request.",
        "spec:\n  chart:\n    spec:\n      version: 1.19.1\n",
        MEDIUM,
    ),
    FindingRule(
        "wide-interval", "Production Kustomization reconciles a day or more apart",
        "The interval is the drift window: a day between reconciliations leaves a hand change a day to run.",
        "Lower spec.interval to an hour or less (receivers can trigger a reconcile on push).",
        "spec:\n  interval: 10m\n",
        LOW,
    ),
    FindingRule(
        "no-health-gate", "Production Kustomization with neither healthChecks nor wait",
        "Without a health gate Flux reports Ready as soon as objects are applied, healthy or not.",
        "Set spec.wait: true (or list spec.healthChecks) so that Ready means the workloads became healthy.",
        "spec:\n  wait: true\n  timeout: 5m\n",
        MEDIUM,
    ),
    FindingRule(
        "orphaned-resources", "Argo CD reports orphaned resources",
        "What runs but is not in Git cannot be reviewed, reproduced or rolled back.",
        "Add the resources to Git or delete them; Argo CD lists them on the app's orphaned resources view.",
        "# AppProject: have Argo CD warn about them (and list them)\nspec:\n  orphanedResources:\n    warn: true\n",
        LOW,
    ),
    FindingRule(
        "hand-change", "Running version differs from Git's pin",
        "OutOfSync, no sync under way and what runs is not what Git pins: someone changed it by hand.",
        "Sync the app to what Git pins, or change the pin by a pull request if the running version is wanted.",
        "# in Git, where the image is pinned\nimages:\n  - name: ghcr.io/acme/checkout\n    newTag: 1.4.2\n",
        HIGH,
    ),
    FindingRule(
        "raw-secret", "Plain Secret in a GitOps repository",
        "A Secret in Git is readable by everyone who can clone it, forever (history keeps it).",
        "Replace the file with a SealedSecret, an ExternalSecret or a SOPS-encrypted file, and rotate the secret.",
        "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: checkout-db\nspec:\n"
        "  secretStoreRef:\n    name: vault\n    kind: ClusterSecretStore\n  target:\n    name: checkout-db\n",
        HIGH,
    ),
    FindingRule(
        "argo-prune-off", "Automated sync that does not prune",
        "Without prune, what is deleted from Git keeps running: Git no longer says everything that runs.",
        "Set spec.syncPolicy.automated.prune: true (protect single objects with the "
        "argocd.argoproj.io/sync-options: Prune=false annotation instead).",
        "spec:\n  syncPolicy:\n    automated:\n      prune: true\n      selfHeal: true\n",
        MEDIUM,
    ),
    FindingRule(
        "flux-prune-off", "Kustomization that does not prune",
        "Without prune, what is deleted from Git keeps running: Git no longer says everything that runs.",
        "Set spec.prune: true (protect single objects with the kustomize.toolkit.fluxcd.io/prune: disabled label).",
        "spec:\n  prune: true\n",
        MEDIUM,
    ),
    FindingRule(
        "mutable-image-tag", "Image tagged :latest or not tagged",
        "A tag that moves deploys whatever was pushed last: no review, no rollback to what ran, no drift detected.",
        "Pin each image to a version tag (or a digest) in Git and raise it by a pull request.",
        "spec:\n  template:\n    spec:\n      containers:\n        - name: app\n"
        "          image: ghcr.io/acme/checkout:1.4.2\n",
        HIGH,
    ),
    FindingRule(
        "no-resource-limits", "Production container without a memory limit",
        "A container without a memory limit can take a node's memory and have its neighbours evicted.",
        "Give every container resources.limits.memory (and requests), sized from what it uses.",
        "resources:\n  requests:\n    cpu: 100m\n    memory: 256Mi\n  limits:\n    memory: 512Mi\n",
        MEDIUM,
    ),
    FindingRule(
        "left-suspended", "Production Flux object left suspended",
        "A suspended object applies nothing from Git and undoes no drift: production no longer follows Git.",
        "Resume it (flux resume, or remove spec.suspend) once the reason it was suspended is gone.",
        "spec:\n  suspend: false\n",
        HIGH,
    ),
    FindingRule(
        "ignore-whole-spec", "ignoreDifferences hides a whole kind's spec",
        "Argo CD then sees no drift in any object of that kind: a hand change stays, Synced and unseen.",
        "Ignore only the fields another controller owns (a JSON pointer per field), for the objects it owns.",
        "spec:\n  ignoreDifferences:\n    - group: apps\n      kind: Deployment\n      jsonPointers:\n"
        "        - /spec/replicas\n",
        HIGH,
    ),
    FindingRule(
        "app-of-apps-cluster-rbac", "App-of-Apps root also deploys cluster-wide RBAC",
        "Whoever can change the root's path can grant themselves the cluster: RBAC belongs to a platform app "
        "of its own, reviewed apart.",
        "Move the ClusterRoles and ClusterRoleBindings to their own Application in a project that alone may "
        "deploy them (clusterResourceWhitelist), and keep the root's project to Applications.",
        "# the root's AppProject\nspec:\n  clusterResourceWhitelist: []\n  namespaceResourceWhitelist:\n"
        "    - group: argoproj.io\n      kind: Application\n",
        HIGH,
    ),
    FindingRule(
        "applied-by-hand", "Object Flux applies was changed with kubectl apply",
        "Flux removes kubectl's last-applied annotation at every apply: one present means a hand apply since.",
        "Make the change in Git, then let Flux apply again; keep kubectl for reading in production.",
        "# the change, in the Kustomization's path in Git; then\n# flux reconcile kustomization <name> --with-source\n",
        HIGH,
    ),
    FindingRule(
        "drift-not-image", "OutOfSync beyond an image change",
        "Drift in configuration, services or RBAC is not a version waiting to roll out: something changed "
        "what Git declares.",
        "Sync the app to undo the change (or commit it to Git if it is wanted), and turn selfHeal on.",
        "spec:\n  syncPolicy:\n    automated:\n      selfHeal: true\n",
        MEDIUM,
    ),
    FindingRule(
        "rollout-unguarded", "Rollout without analysis or automatic abort",
        "A progressive rollout that nothing measures promotes a bad version on a timer, or waits for a person "
        "to notice.",
        "Add an analysis (a canary step or background analysis, or blue-green pre-promotion analysis), or at "
        "least progressDeadlineAbort: true.",
        "spec:\n  progressDeadlineAbort: true\n  strategy:\n    canary:\n      analysis:\n        templates:\n"
        "          - templateName: success-rate\n        startingStep: 1\n",
        MEDIUM,
    ),
)
RULES: dict[str, FindingRule] = {rule.id: rule for rule in _RULE_LIST}
