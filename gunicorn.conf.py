"""gunicorn's settings, read from the working directory (the image's /app) by `gunicorn portal.wsgi`
as the chart and docker-compose.yml run it. Its access lines name the request id the portal
answered with; with PORTAL_LOG_FORMAT=json all its lines are JSON, and in either format they are redacted
(portal/gunicornlogs.py)."""

from portal import settings as portal_settings  # the one reader of the environment

access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms request_id=%({x-request-id}o)s'
logger_class = ("portal.gunicornlogs.JsonLogger" if portal_settings.PORTAL_LOG_FORMAT == "json"
                else "portal.gunicornlogs.RedactingLogger")
