# Filled by the notifications issue (rules, channels, deliveries page).
urlpatterns: list = []
