"""runner layer (see design.md)."""
