"""kbkit: one MCP server entry for a team's knowledge base, and one way to wire agents to it."""

__version__ = "0.1.0"
"""The one place the version is written (pyproject.toml reads it from here)."""

__all__ = ["__version__"]
