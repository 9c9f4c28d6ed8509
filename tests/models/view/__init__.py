"""Tests for models/view/."""
