FROM python:3.11-slim
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY portal portal
COPY gitops gitops
COPY forges forges
RUN pip install --no-cache-dir .
COPY . .
RUN python manage.py collectstatic --noinput
USER nobody
