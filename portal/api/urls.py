from django.urls import path, re_path

from portal.api import agents, docs, findings, projects, security, services, views, workloads

# Path segments are what Kubernetes and the catalog allow; anything else falls through to a JSON 404.
urlpatterns = [
    path("v1/gitops", views.GitOpsListView.as_view(), name="api-gitops"),
    re_path(
        r"^v1/gitops/(?P<cluster>[-a-zA-Z0-9_]+)/(?P<namespace>[a-z0-9][-a-z0-9.]*)/(?P<name>[a-z0-9][-a-z0-9.]*)$",
        views.GitOpsDetailView.as_view(),
        name="api-gitops-detail",
    ),
    path("v1/findings", findings.FindingListView.as_view(), name="api-findings"),
    path("v1/pull-requests", views.PullRequestListView.as_view(), name="api-pull-requests"),
    path("v1/agents/<slug:cluster>/snapshots", agents.receive_snapshot, name="api-agent-snapshots"),
    path("v1/projects", projects.ProjectListView.as_view(), name="api-projects"),
    path("v1/workloads", workloads.WorkloadListView.as_view(), name="api-workloads"),
    path("v1/services", services.ServiceListView.as_view(), name="api-services"),
    path("v1/security", security.SecurityView.as_view(), name="api-security"),
    path("schema", views.SchemaView.as_view(), name="api-schema"),
    path("docs", docs.api_docs, name="api-docs"),
    re_path(r"^.*$", views.NotFoundView.as_view(), name="api-not-found"),
]
