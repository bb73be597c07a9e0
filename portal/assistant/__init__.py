"""Assistant access: the portal's read-only MCP server (portal.assistant.server)."""
