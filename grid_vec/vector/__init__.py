"""vector layer (see design.md)."""
