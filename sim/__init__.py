"""sim layer (see docs/design.md)."""
