"""The instants-per-second ceiling (reports/truetime_ceiling.py): a run's point from its folder,
and the plot over a grid."""

from __future__ import annotations

from reports.truetime_ceiling import CeilingPoint, ceiling_point, plot_truetime_ceiling


def test_four_jobs_asking_eight_a_second_get_the_ceiling(runs):
    """truetime_instant_ceiling: four jobs, half-second checkpoints, a 200 ms bound: asked 8 a
    second, minted no more than 1 / (2 x 0.2 s), and the writers wait for it."""
    point = ceiling_point(runs["ceiling"])
    assert point.bound_ms == 200 and point.asked_per_s == 8
    assert point.ceiling_per_s == 2.5
    assert 2.0 <= point.minted_per_s <= 2.5
    assert point.blocked > 0.3


def test_plot_draws_each_bound_and_names_its_ceiling(tmp_path):
    points = [
        CeilingPoint(bound, asked, min(asked, 1000 / (2 * bound)), asked / 40)
        for bound in (50, 200)
        for asked in (1, 2, 4, 8, 16)
    ]
    figure = plot_truetime_ceiling(points, tmp_path)
    assert figure.png.stat().st_size > 10_000
    assert "bound 50 ms: ceiling 10/s; asked 16/s, minted 10/s" in figure.caption
    assert "bound 200 ms: ceiling 2.5/s; asked 16/s, minted 2.5/s" in figure.caption
