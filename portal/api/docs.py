"""/api/docs: the OpenAPI schema as a plain server-rendered page.

Swagger UI and Redoc load their scripts from a CDN unless drf-spectacular-sidecar is
installed; the portal serves no third-party script it has not vendored, so this page is
rendered from the same generated schema instead.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from drf_spectacular.generators import SchemaGenerator

from portal.accounts.roles import Role, requires_role

METHODS = ("get", "post", "put", "patch", "delete")


def _type_of(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "allOf" in schema and schema["allOf"]:
        return _type_of(schema["allOf"][0])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type_of(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type_of(schema['additionalProperties'])}"
    return f"{kind} ({schema['format']})" if schema.get("format") else kind


def _field_rows(schema: dict[str, Any]) -> list[dict[str, Any]]:
    required = set(schema.get("required", []))
    return [
        {
            "name": name,
            "type": _type_of(prop),
            "nullable": bool(prop.get("nullable")),
            "required": name in required,
            "enum": [value for value in prop.get("enum", []) if value is not None],
            "description": prop.get("description", ""),
        }
        for name, prop in schema.get("properties", {}).items()
    ]


def _operations(spec: dict[str, Any]) -> list[dict[str, Any]]:
    operations = []
    for route, item in spec.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if not operation:
                continue
            responses = []
            for code, response in operation.get("responses", {}).items():
                body = response.get("content", {}).get("application/json", {}).get("schema", {})
                responses.append({"code": code, "description": response.get("description", ""),
                                  "type": _type_of(body) if body else ""})
            operations.append({
                "method": method.upper(),
                "path": route,
                "summary": operation.get("summary", ""),
                "description": operation.get("description", ""),
                "parameters": [
                    {
                        "name": p["name"], "where": p["in"], "required": p.get("required", False),
                        "type": _type_of(p.get("schema", {})), "enum": p.get("schema", {}).get("enum", []),
                        "description": p.get("description", ""),
                    }
                    for p in operation.get("parameters", [])
                ],
                "responses": responses,
            })
    return operations


@requires_role(Role.VIEWER)
def api_docs(request: HttpRequest) -> HttpResponse:
    spec = SchemaGenerator().get_schema(request=None, public=True)
    schemas = [
        {"name": name, "description": schema.get("description", ""), "fields": _field_rows(schema),
         "enum": schema.get("enum", [])}
        for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items())
    ]
    context = {"info": spec.get("info", {}), "operations": _operations(spec), "schemas": schemas}
    return render(request, "api/docs.html", context)
