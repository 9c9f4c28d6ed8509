"""The bench's outputs: one table (Markdown, so it pastes into the README as is) and
``results.json`` with every sample."""

from __future__ import annotations

from typing import Any

from bench.measure import Measurement


def number(value: float | None) -> str:
    """A readable number: thousands separators when large, 3 significant digits when small."""
    if value is None:
        return "-"
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _reached(m: Measurement) -> str:
    reached = m.reached()
    if m.details.get("skipped"):
        return "skipped"
    if reached is None:
        return "-"
    return "yes" if reached else "**no**"


def table_lines(measurements: list[Measurement], errors: dict[str, str]) -> list[str]:
    """The main table: one line per measurement, ratios as min / median / max."""
    lines = [
        "| measurement | ours (median) | reference (median) | ratio min / median / max "
        "| ratio is | target | reached |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in measurements:
        ratio = m.ratio()
        spread = " / ".join(number(ratio[k]) for k in ("min", "median", "max"))
        ours = _median(m.ours_samples)
        ref = _median(m.reference_samples)
        lines.append(
            f"| {m.key}: {m.title} | {number(ours)} {m.ours} | {number(ref)} {m.reference} "
            f"| {spread} | {m.ratio_meaning} | {m.target.text if m.target else '-'} "
            f"| {_reached(m)} |"
        )
    for row, error in errors.items():
        lines.append(f"| {row}: FAILED ({error}) | - | - | - | - | - | - |")
    return lines


def scaling_lines(measurements: list[Measurement]) -> list[str]:
    """Row 5's runtimes per point (median wall s) beside the fitted exponent."""
    scaling = [m for m in measurements if m.row == "scaling"]
    if not scaling:
        return []
    lines = [
        "| scaling | values | median wall s per value | exponent k (median) |",
        "|---|---|---|---|",
    ]
    for m in scaling:
        values = ", ".join(f"{v:g}" for v in m.details["values"])
        runtimes = ", ".join(number(_median(samples)) for samples in m.details["runtime_s"])
        lines.append(f"| {m.name} | {values} | {runtimes} | {number(m.ratio()['median'])} |")
    return lines


def _median(values: list[float]) -> float | None:
    from statistics import median

    return median(values) if values else None


def results_json(
    measurements: list[Measurement],
    errors: dict[str, str],
    header: dict[str, Any],
) -> dict[str, Any]:
    """Everything ``results.json`` holds: the run's header (date, machine, sizes, load) and per
    measurement the raw samples, ratios, target and whether it was reached."""
    return {
        **header,
        "measurements": [m.to_json() for m in measurements],
        "errors": errors,
        "targets": {
            m.key: {"target": m.target.text, "reached": m.reached()}
            for m in measurements
            if m.target is not None
        },
    }
