"""Tests for models/write/."""
