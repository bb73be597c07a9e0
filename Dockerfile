FROM python:3.11-slim
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY portal portal
COPY gitops gitops
COPY forges forges
# Optional extras, e.g. `docker build --build-arg PORTAL_EXTRAS=helm .` for the rendered diff of
# chart applications (about 250 MB more; README "Rendered diff").
ARG PORTAL_EXTRAS=""
RUN pip install --no-cache-dir ".${PORTAL_EXTRAS:+[$PORTAL_EXTRAS]}"
COPY . .
RUN python manage.py collectstatic --noinput
USER nobody
