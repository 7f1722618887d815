"""integrations layer (see design.md)."""
