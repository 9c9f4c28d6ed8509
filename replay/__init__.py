"""replay layer (see docs/design.md)."""
