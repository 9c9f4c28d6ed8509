"""invariants layer (see docs/design.md)."""
