"""Tests for models/format/."""
