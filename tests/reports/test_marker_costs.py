"""What markers cost (reports/marker_costs.py): a run's point from its folder, and the plot over
the markers grid."""

from __future__ import annotations

from reports.marker_costs import MarkerPoint, marker_point, plot_marker_costs


def test_a_timeline_server_run_counts_its_files_requests_and_waits(runs):
    point = marker_point(runs["server_markers"])
    assert (point.markers, point.profile) == ("timeline_server", "object_store")
    assert point.data_files > 0
    assert point.server_requests >= point.data_files  # one request per data file, retries more
    assert 0 < point.server_batches < point.server_requests
    assert point.marker_requests > 0 and point.marker_request_time_ms > 0
    # each marker waits at least for the next batch's write (50 ms on the object store)
    assert point.wait_per_file_ms >= 50


def test_a_direct_run_waits_for_its_conditional_puts(runs):
    point = marker_point(runs["async"])
    assert (point.markers, point.profile) == ("direct", "local")
    assert point.server_requests == 0 and point.server_batches == 0
    assert point.data_files > 0 and point.writer_wait_ms > 0


def test_plot_draws_both_kinds_per_profile_and_says_the_numbers(tmp_path):
    points = [
        MarkerPoint("direct", "object_store", 100, 350, 14_000, 5_000, 0, 0),
        MarkerPoint("timeline_server", "object_store", 100, 178, 7_000, 12_000, 100, 25),
        MarkerPoint("direct", "local", 100, 350, 1_750, 500, 0, 0),
    ]
    figure = plot_marker_costs(points, tmp_path)
    assert figure.png.stat().st_size > 10_000
    assert "object_store/direct: 100 data files, 350 marker storage requests (3.50 per file" in (
        figure.caption
    )
    assert "writers waited 120 ms per file, 100 requests to the server in 25 batches" in (
        figure.caption
    )
