"""Shared test fixtures: the real Hudi tables in tests/fixtures/hudi-tables, unzipped once.

Hypothesis profiles: ``ci`` (derandomized, selected when CI=true) and ``dev`` (the default).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures" / "hudi-tables"
FIXTURE_NAMES = sorted(p.stem for p in FIXTURES_DIR.glob("*.zip"))


@pytest.fixture(scope="session")
def fixture_tables(tmp_path_factory) -> dict[str, Path]:
    """Zip stem -> path of the unzipped table (each zip holds one top folder plus __MACOSX)."""
    assert FIXTURE_NAMES, f"no fixture tables at {FIXTURES_DIR}"
    root = tmp_path_factory.mktemp("hudi-fixtures")
    tables = {}
    for name in FIXTURE_NAMES:
        target = root / name
        with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as archive:
            members = [m for m in archive.namelist() if not m.startswith("__MACOSX")]
            archive.extractall(target, members)
            # keep the zip's modification times: layout-1 completion times come from them
            for info in archive.infolist():
                if info.filename in members and not info.is_dir():
                    stamp = _zip_time(info)
                    os.utime(target / info.filename, (stamp, stamp))
        (top,) = [p for p in target.iterdir() if p.is_dir()]
        tables[name] = top
    return tables


def _zip_time(info: zipfile.ZipInfo) -> float:
    import calendar

    return float(calendar.timegm((*info.date_time, 0, 0, 0)))
