"""invariants layer (see ../shared/DESIGN.md)."""
