"""Tests for reports/html.py: one self-contained report.html from a suite folder, checked in a
real headless browser (Debian's chromium) when it is installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from reports.html import write_report

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


@pytest.fixture(scope="module")
def suite(runs, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    entries = [
        entry(root, "blocking", runs["blocking"]),
        entry(root, "async", runs["async"]),
        entry(root, "skew", runs["skew"]),
        entry(root, "tt_safe", runs["tt_safe"], grid="truetime", scenario="tt_grid"),
        entry(root, "tt_unsafe", runs["tt_unsafe"], grid="truetime", scenario="tt_grid"),
    ]
    (root / "runs" / "skew" / "counterexample.toml").write_text(COUNTEREXAMPLE)
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
    assert "testbed run scenarios/catalog/local_clock_skew.toml --seed 5" in html
    assert "Minimal counterexample" in html and "kind = &quot;lose_ack&quot;" in html
    skew = json.loads((suite / "runs" / "skew" / "result.json").read_text())
    first_why = skew["invariants"]["instant_monotonic"]["violations"][0]["why"]
    assert first_why.replace("&", "&amp;").replace("<", "&lt;")[:80] in html
    assert "async removes the commit stalls" in html


def test_report_tolerates_a_minimal_summary(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"runs": []}))
    html = write_report(tmp_path).read_text()
    assert "<h2>Summary</h2>" in html


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_report_renders_in_headless_chromium(suite, tmp_path):
    shot = tmp_path / "report.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1280,2400",
            (suite / "report.html").as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    pixels = imread(shot)
    assert pixels.shape[0] == 2400 and pixels.shape[1] == 1280
    gray = pixels[..., :3].mean(axis=2)
    assert gray.std() > 0.05  # not a blank page: text, tables and plots
    assert (gray < 0.5).mean() > 0.005  # some dark ink (the text)
    assert len(np.unique((pixels[..., :3] * 255).astype(int).reshape(-1, 3), axis=0)) > 50
