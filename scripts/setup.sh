#!/usr/bin/env bash
# Create .venv (if missing) and install the testbed with its test dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# pip's complaints about index locations this machine's pip configuration names but lacks
# ("Location 'file:///...' is ignored") are noise, not the project's: keep every other line.
quiet_pip() {
  .venv/bin/python -m pip "$@" 2> >(grep -v "^WARNING: Location 'file:" >&2)
}
quiet_pip install --quiet --upgrade pip
quiet_pip install --quiet -e '.[test]'
