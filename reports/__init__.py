"""reports layer (see docs/design.md)."""
