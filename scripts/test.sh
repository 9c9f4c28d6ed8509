#!/usr/bin/env bash
# Set up, lint, and run the test suite (slow sweeps excluded; run them with: -m slow).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/lint-imports
.venv/bin/python -m pytest "$@"
