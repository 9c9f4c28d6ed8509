"""Tests for models/txn/."""
