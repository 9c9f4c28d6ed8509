"""testbed layer (see ../shared/DESIGN.md)."""
