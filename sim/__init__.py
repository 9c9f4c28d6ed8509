"""sim layer (see ../shared/DESIGN.md)."""
