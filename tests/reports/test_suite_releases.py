"""The release matrix of a suite's report (reports/suite_releases.py): one row per grid over
``protocol.release``, a cell per release with what its run violated."""

from __future__ import annotations

from reports.suite_releases import release_grids, release_matrix


def point(grid: str, release: str) -> dict:
    return {
        "scenario": f"{grid}-release={release}",
        "grid": grid,
        "params": {"protocol.release": release},
        "description": f"a bug: release = {release}",
    }


def run(grid: str, release: str, violated: list[str], ok: bool = True) -> dict:
    return {"scenario": f"{grid}-release={release}", "violated": violated, "ok": ok}


def test_only_grids_over_the_release_alone_make_rows():
    grids = {
        "bug": [point("bug", r) for r in ("1.0", "1.1", "latest")],
        "skew": [{"scenario": "skew-a", "params": {"time.clock_skew_ms": 1}}],
    }
    assert set(release_grids(grids)) == {"bug"}
    assert release_matrix({"skew": grids["skew"]}, []) == ""


def test_a_cell_per_release_says_what_was_violated_and_whether_as_expected():
    grids = {"bug": [point("bug", r) for r in ("1.0", "1.1", "latest")]}
    runs = [
        run("bug", "1.0", []),
        run("bug", "1.1", ["no_data_loss"]),
        run("bug", "latest", ["exactly_once"], ok=False),
    ]
    html = release_matrix(grids, runs)
    assert "<th>1.0</th><th>1.1</th><th>latest</th>" in html
    assert '<span class="badge pass">none</span>' in html
    assert '<span class="badge caught">no_data_loss</span>' in html
    assert '<span class="badge fail">exactly_once</span>' in html
    assert 'href="#g-bug"' in html and "a bug" in html
