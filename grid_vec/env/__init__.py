"""env layer (see design.md)."""
