"""Tests for models/flink/."""
