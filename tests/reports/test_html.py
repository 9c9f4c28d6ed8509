"""Tests for reports/html.py: one self-contained report.html from a suite folder, checked in a
real headless browser (Debian's chromium) when it is installed."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from PIL import Image

from reports.html import write_report
from reports.page import EMBED_MAX_WIDTH_PX

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None
)
COUNTEREXAMPLE = """# counterexample found by testbed explore
[[faults.schedule]]
at_s = 2.0
kind = "lose_ack"
target = "ingest_a"
"""


def entry(suite: Path, key: str, folder: Path, **extra) -> dict:
    """A summary.json run entry for ``folder`` (copied under ``suite/runs/<key>``)."""
    target = suite / "runs" / key
    shutil.copytree(folder, target)
    result = json.loads((target / "result.json").read_text())
    violated = sorted(n for n, v in result["invariants"].items() if not v["ok"])
    run = {
        "scenario": result["scenario"],
        "description": f"description of {result['scenario']}",
        "seed": result["seed"],
        "run_dir": f"runs/{key}",
        "ok": result["ok"],
        "expected_violations": result["expected_violations"],
        "violated": violated,
        "error": None,
        "replay": f"testbed run scenarios/catalog/{result['scenario']}.toml --seed {result['seed']}",
        "wall_s": 1.5,
        "metrics": result["metrics"],
        "grid": None,
        "params": {},
    }
    run.update(extra)
    return run


EXPLANATION = """minimal counterexample of local_clock_skew (shrunk in 3 runs from seed 5, 12 s):
seed 5, 12 s simulated, 1 scheduled fault:
  [0] at 2 s lose_ack ingest_a -> history #17 ack_lost at 2.1 s
instant_monotonic violated (expected):
  - instant 20260101000002000 was requested after 20260101000002100 but is earlier [events 17, 18]
"""
REPLAY = "testbed run /somewhere/runs/skew/counterexample.toml"


@pytest.fixture(scope="module")
def suite(runs, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    entries = [
        entry(root, "blocking", runs["blocking"]),
        entry(root, "async", runs["async"]),
        entry(root, "async-seed2", runs["async"], seed=2),  # --seeds 2: one more seed
        entry(root, "skew", runs["skew"]),
        entry(root, "tt_safe", runs["tt_safe"], grid="truetime", scenario="tt_grid"),
        entry(root, "tt_unsafe", runs["tt_unsafe"], grid="truetime", scenario="tt_grid"),
    ]
    (root / "runs" / "skew" / "counterexample.toml").write_text(COUNTEREXAMPLE)
    (root / "runs" / "skew" / "counterexample.txt").write_text(f"{EXPLANATION}replay: {REPLAY}\n")
    # A real failure: a scenario whose verdict differs from its expectation.
    failing = dict(entries[1], scenario="async_claimed_bad", ok=False)
    failing["expected_violations"] = ["no_data_loss"]
    entries.append(failing)
    summary = {
        "suite": "unit",
        "description": "A suite written by hand for the report test.",
        "seeds": 1,
        "ok": False,
        "interrupted": False,
        "runs": entries,
    }  # no "scenarios": the report derives them from the runs
    (root / "summary.json").write_text(json.dumps(summary))
    write_report(root)
    return root


def embedded(html: str) -> list[bytes]:
    return [base64.b64decode(d) for d in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]


def test_report_is_one_self_contained_file(suite):
    html = (suite / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html and "<link" not in html
    assert not re.search(r'src="(?!data:image/png;base64,)', html)  # every image embedded
    assert html.count("data:image/png;base64,") >= 8
    assert (suite / "plots" / "headline" / "blocking_vs_async.svg").is_file()
    assert (suite / "plots" / "headline" / "truetime.png").is_file()


def test_report_shows_verdicts_violations_replay_and_counterexample(suite):
    html = (suite / "report.html").read_text()
    for name in ("blocking_stalls", "async_baseline", "local_clock_skew", "async_claimed_bad"):
        assert f'id="s-{name}"' in html
    assert "tt_grid" not in html.split("Headline comparisons")[0]  # grid runs: no section
    assert "caught as expected" in html  # the known-bad variant
    assert "NOT as expected" in html  # the failing entry, in red
    assert '<section id="s-async_claimed_bad" class="scenario fail">' in html
    assert '<section id="s-local_clock_skew" class="scenario caught">' in html
    text = re.sub(r"<[^>]+>", "", html)
    assert "testbed run scenarios/catalog/local_clock_skew.toml --seed 5" in text
    # a replay command wraps only between its arguments
    assert '<span class="arg">scenarios/catalog/local_clock_skew.toml</span>' in html
    assert "Minimal counterexample" in html and "kind = &quot;lose_ack&quot;" in html
    skew = json.loads((suite / "runs" / "skew" / "result.json").read_text())
    first_why = skew["invariants"]["instant_monotonic"]["violations"][0]["why"]
    assert first_why.replace("&", "&amp;").replace("<", "&lt;")[:80] in html
    assert (
        "Blocking vs async instant generation" in html and "waiting for the previous commit" in html
    )


def test_report_tolerates_a_minimal_summary(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"runs": []}))
    html = write_report(tmp_path).read_text()
    assert "<h2>Summary</h2>" in html


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium is not installed (CI installs it and never skips)",
)


def chromium(*args: str, profile: Path) -> str:
    """Run headless chromium (the flags a closed network needs) and return its stdout."""
    assert CHROMIUM is not None, "chromium is not installed: .ci/run installs it"
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


@needs_chromium
def test_report_is_readable_at_800_px(suite, tmp_path):
    """Nothing is wider than an 800 px window: wide tables scroll in their own box."""
    page = tmp_path / "measured.html"
    probe = "<script>document.title = 'width=' + document.documentElement.scrollWidth;</script>"
    html = (suite / "report.html").read_text()
    page.write_text(html.replace("</body>", probe + "</body>"))
    dom = chromium(
        "--window-size=800,1000", "--dump-dom", page.as_uri(), profile=tmp_path / "profile"
    )
    (width,) = re.findall(r"<title>width=(\d+)</title>", dom)
    assert int(width) <= 800


@needs_chromium
def test_report_renders_in_headless_chromium(suite, tmp_path):
    shot = tmp_path / "report.png"
    chromium(
        f"--screenshot={shot}",
        "--window-size=1280,2400",
        (suite / "report.html").as_uri(),
        profile=tmp_path / "profile",
    )
    pixels = imread(shot)
    assert pixels.shape[0] == 2400 and pixels.shape[1] == 1280
    gray = pixels[..., :3].mean(axis=2)
    assert gray.std() > 0.05  # not a blank page: text, tables and plots
    assert (gray < 0.5).mean() > 0.005  # some dark ink (the text)
    assert len(np.unique((pixels[..., :3] * 255).astype(int).reshape(-1, 3), axis=0)) > 50


def test_report_embeds_small_palette_pngs_never_svg(suite):
    html = (suite / "report.html").read_text()
    assert "data:image/svg" not in html and "<svg" not in html
    images = embedded(html)
    for data in images:
        with Image.open(io.BytesIO(data)) as image:
            assert image.format == "PNG" and image.mode == "P"  # palette, not true color
            assert image.width <= EMBED_MAX_WIDTH_PX
    # The standalone files keep full resolution (PNG and SVG), and the page links to them.
    png = suite / "plots" / "headline" / "blocking_vs_async.png"
    with Image.open(png) as full:
        assert full.mode == "RGBA" and full.width > EMBED_MAX_WIDTH_PX
    assert 'href="plots/headline/blocking_vs_async.svg"' in html
    # Size bound: a handful of runs (7 sections' worth of plots) stays well under a megabyte
    # per ten plots; the full suite's report was 18 MB with true-color copies.
    assert len(html) < 40_000 * len(images) + 200_000
    assert sum(map(len, images)) / len(images) < 30_000


def test_the_counterexample_shows_its_explanation_replay_and_toml(suite):
    html = (suite / "report.html").read_text()
    section = html.split('<section id="s-local_clock_skew"')[1].split("</section>")[0]
    block = section.split('<div class="counterexample">')[1]
    assert "instant_monotonic violated (expected):" in block
    assert "[0] at 2 s lose_ack ingest_a" in block
    assert f"replay: {REPLAY}" in re.sub(r"<[^>]+>", "", block)
    assert "replay: testbed" not in block.split("<pre")[1]  # the replay line is not repeated
    assert block.index("explanation") < block.index("counterexample.toml</a>")  # then the TOML
    assert "kind = &quot;lose_ack&quot;" in block


def test_more_seeds_get_distributions_and_links_instead_of_plots(suite):
    html = (suite / "report.html").read_text()
    section = html.split('<section id="s-async_baseline"')[1].split("</section>")[0]
    assert "Across 2 seeds" in section
    assert "violations per invariant across 2 seeds" in section
    assert (suite / "plots" / "distributions" / "async_baseline" / "metrics.svg").is_file()
    assert section.count("Plots (seed") == 1  # seed 2 repeats seed 1: not drawn again
    assert 'href="runs/async-seed2/">run folder</a>' in section
    assert not (suite / "plots" / "runs_async-seed2").exists()
    single = html.split('<section id="s-blocking_stalls"')[1].split("</section>")[0]
    assert "Across" not in single  # one seed: nothing to distribute


def test_grid_points_share_one_section(runs, tmp_path):
    entries = [
        entry(tmp_path, "tt_safe", runs["tt_safe"], grid="truetime", scenario="tt-a"),
        entry(tmp_path, "tt_unsafe", runs["tt_unsafe"], grid="truetime", scenario="tt-b"),
    ]
    entries[0]["params"] = {"time.max_expected_skew_ms": 100, "time.clock_skew_ms": 20}
    entries[0] |= {"ok": True, "expected_violations": [], "expect": "none"}
    entries[1]["params"] = {"time.max_expected_skew_ms": 20, "time.clock_skew_ms": 500}
    entries[1] |= {"ok": True, "expect": "any-of", "may_violate": entries[1]["violated"]}
    scenarios = [
        {
            "scenario": e["scenario"],
            "description": f"Grid truetime (bound vs skew) over x: {e['scenario']}.",
            "runs": 1,
            "ok": e["ok"],
            "expected_violations": [],
            "violated_in": dict.fromkeys(e["violated"], 1),
            "expect": e.get("expect", "exact"),
            "may_violate": e.get("may_violate", []),
            "grid": e["grid"],
            "params": e["params"],
        }
        for e in entries
    ]
    summary = {"suite": "g", "seeds": 1, "ok": True, "runs": entries, "scenarios": scenarios}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    html = write_report(tmp_path).read_text()
    assert 'id="s-tt-a"' not in html and 'id="s-tt-b"' not in html
    grid = html.split('<section id="g-truetime"')[1].split("</section>")[0]
    assert "Grid truetime (bound vs skew) over x." in grid
    assert "every point as expected" in grid and "NOT as expected" not in grid
    assert "max_expected_skew_ms = 100, clock_skew_ms = 20" in grid
    assert "any of " in grid and "as expected (violations allowed)" in grid
    assert 'href="#g-truetime">grid truetime</a>' in html  # one summary row for the grid
    assert "Plots of max_expected_skew_ms = 100" in grid  # its first point
    assert "First violation in the grid: max_expected_skew_ms = 20" in grid
    assert grid.count("happens-before") >= 1 and grid.count("Plots of") == 1
