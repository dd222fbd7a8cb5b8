"""The MCP surface: one server factory, wrapped by the stdio (and later HTTP) transports."""
