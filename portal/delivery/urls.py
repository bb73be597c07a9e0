from django.urls import path

from portal.delivery import views_pr, views_updates

urlpatterns = [
    path("pr/preview", views_pr.pr_preview, name="pr-preview"),
    path("pr/open", views_pr.pr_open, name="pr-open"),
    path("pr/opened", views_pr.pr_opened, name="pr-opened"),
    path("updates/put-off", views_updates.put_off_version, name="updates-put-off"),
    path("updates/freezes", views_updates.freeze_create, name="freeze-create"),
    path("updates/freezes/end", views_updates.freeze_end, name="freeze-end"),
]
