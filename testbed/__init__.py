"""testbed layer (see docs/design.md)."""
