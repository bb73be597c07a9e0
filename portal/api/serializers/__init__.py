"""The API's contract: every field a client may rely on is declared in this package, with its type.

Responses are built only through these serializers; the OpenAPI schema at /api/schema is
generated from them, so the documentation cannot drift from what is served. One module per
resource (`<resource>_serializers`), the shared field types in `api_fields`.
"""
