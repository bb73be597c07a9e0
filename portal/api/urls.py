# Filled by the REST API issue (GET /api/v1/gitops, /api/v1/pull-requests, /api/schema).
urlpatterns: list = []
