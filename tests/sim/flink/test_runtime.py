"""Tests for sim/flink/runtime.py: how a role's process fails its job, ends on a failover, and
sends over its gateways."""

from __future__ import annotations

import pytest
import simpy

from models.storage import FileAlreadyExistsError
from sim.flink.runtime import Gateway, describe
from sim.storage import StorageWriteError
from tests.sim.flink.harness import JOB, RoleHarness


def failing(env: simpy.Environment, error: BaseException):
    yield env.timeout(1)
    raise error


def test_a_job_failure_is_recorded_and_fails_the_attempt():
    h = RoleHarness(epoch=3)
    h.attempt.spawn("task-1", failing(h.env, StorageWriteError("injected write failure: x")))
    h.env.run()
    assert h.named == [f"{JOB}/task-1"]
    (error,) = h.events("error")
    assert (error.process, error.type) == (f"{JOB}/task-1", "fail")
    assert error.value == {"error": "StorageWriteError: injected write failure: x"}
    assert h.control.failures == [(3, "task-1: StorageWriteError: injected write failure: x")]


def test_an_interrupt_ends_the_process_quietly():
    h = RoleHarness()

    def body():
        yield h.env.timeout(1000)

    h.attempt.spawn("source", body())
    (process,) = h.attempt.processes

    def failover():
        yield h.env.timeout(10)
        process.interrupt("failover")

    h.env.process(failover())
    h.env.run(until=11)
    assert not process.is_alive
    assert h.control.failures == [] and h.events() == []


def test_a_bug_is_not_a_job_failure():
    h = RoleHarness()
    h.attempt.spawn("coordinator", failing(h.env, KeyError("bug")))
    with pytest.raises(KeyError):
        h.env.run()
    assert h.control.failures == []


def test_start_keeps_the_processes_in_order_and_is_current_follows_the_job():
    h = RoleHarness(epoch=2)

    def body():
        yield h.env.timeout(1)

    h.attempt.start(body())
    h.attempt.spawn("checkpoint", body())
    assert len(h.attempt.processes) == 2
    assert h.attempt.is_current(2) and not h.attempt.is_current(1)
    h.control.epoch = 3  # the job failed over
    assert not h.attempt.is_current(2)
    assert h.attempt.process_name("task-0") == f"{JOB}/task-0"


def test_two_gateways_on_one_channel_keep_its_order():
    h = RoleHarness()
    channel = h.channel("task-0->jm", delay_ms=(1, 50))
    got: list[tuple[str, int]] = []
    events = Gateway(channel, lambda m: got.append(("event", m)))
    acks = Gateway(channel, lambda m: got.append(("ack", m)))
    for i in range(20):
        (events if i % 3 else acks).send(i)
    h.env.run()
    assert [m for _, m in got] == list(range(20))
    assert {kind for kind, _ in got} == {"event", "ack"}


def test_describe_names_the_exception_class():
    assert describe(FileAlreadyExistsError("t/.hoodie/1.commit")).startswith(
        "FileAlreadyExistsError: "
    )
    assert describe(ValueError("x")) == "ValueError: x"
