"""Tests for models/timeline/."""
