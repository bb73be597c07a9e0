"""The portal's read-only MCP server (server.py): tools (tools.py) over the REST API's own
FilterSets, querysets, cursors and serializers (api_pages.py), served at /mcp (views.py)
and over stdio (`manage.py mcp --stdio`, portal/api/management/commands/mcp.py)."""
