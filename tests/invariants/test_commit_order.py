"""Tests for invariants/commit_order.py: checkpoint order, instants committed twice, and
completed files created out of completion-time order.
"""

from __future__ import annotations

from invariants.commit_order import check_commit_order
from tests.invariants.test_instant_times import add_completed, empty_table, gen, history, t


def commit(job: str, instant_ms: int, completion_ms: int, checkpoint: int) -> tuple:
    value = {"instant": t(instant_ms), "completion": t(completion_ms), "checkpoint": checkpoint}
    return (f"{job}/coordinator", "ok", "commit", value)


def test_commit_order_flags_a_job_committing_an_older_checkpoint_later():
    events = history(
        gen("a/coordinator", 1),
        commit("a", 100, 200, 1),
        commit("a", 300, 400, 3),
        commit("b", 310, 410, 1),  # another job: its own order
        commit("a", 250, 500, 2),  # job a goes back from checkpoint 3 to 2
    )
    (violation,) = check_commit_order(events, None).violations
    assert violation.events == (2, 4)
    assert violation.why == (
        f"job a committed instant {t(250)} of checkpoint 2 at t=0.040s after instant {t(300)} of "
        "checkpoint 3 at t=0.020s: instants must commit in checkpoint order"
    )


def test_commit_order_flags_an_instant_committed_twice():
    done = {"instant": t(100), "action": "deltacommit"}
    events = history(
        gen("a/coordinator", 100),
        gen("a/coordinator", 200, "completion", **done),
        commit("a", 100, 200, 1),
        gen("a/coordinator", 300, "completion", **done),
        commit("a", 100, 300, 2),
    )
    (violation,) = check_commit_order(events, None).violations
    assert violation.events == (1, 3)
    assert violation.why.startswith(
        f"instant {t(100)} committed 2 times: completed files were created with completion times "
        f"{t(200)} (event 1), {t(300)} (event 3)"
    )


def test_commit_order_finds_two_completed_files_of_one_instant_on_the_table():
    table = empty_table()
    add_completed(table, t(100), t(200), "deltacommit")
    add_completed(table, t(100), t(300), "deltacommit")
    events = history(gen("a/coordinator", 100))
    (violation,) = check_commit_order(events, table).violations
    assert violation.why.startswith(
        f"the table's timeline holds 2 completed files of deltacommit {t(100)}"
    )


def test_commit_order_flags_completed_files_created_out_of_completion_time_order():
    events = history(
        gen("a/coordinator", 100),
        gen("b/coordinator", 150),
        gen("b/coordinator", 500, "completion", instant=t(150), action="deltacommit"),
        gen("a/coordinator", 400, "completion", instant=t(100), action="deltacommit"),
        gen("a/coordinator", 300, "completion", error="FileAlreadyExistsError: x"),  # no file
    )
    (violation,) = check_commit_order(events, None).violations
    assert violation.events == (2, 3)
    assert violation.why.startswith(
        f"the completed file of deltacommit {t(100)} (completion {t(400)}) was created by "
        f"a/coordinator at t=0.030s after that of deltacommit {t(150)} (completion {t(500)}) by "
        "b/coordinator at t=0.020s: completed files must appear in completion-time order"
    )


def test_commit_order_passes_an_orderly_history():
    events = history(
        gen("a/coordinator", 100),
        gen("a/coordinator", 200, "completion", instant=t(100), action="deltacommit"),
        commit("a", 100, 200, 1),
        gen("a/coordinator", 300),
        gen("a/coordinator", 400, "completion", instant=t(300), action="deltacommit"),
        commit("a", 300, 400, 1),  # same checkpoint again (minibatch): not a step back
    )
    assert check_commit_order(events, None).ok
