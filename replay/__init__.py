"""replay layer (see ../shared/DESIGN.md)."""
