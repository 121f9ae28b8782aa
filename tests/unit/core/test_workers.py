"""The executor's delivery workers: every item submitted while running is worked on before running() ends."""

from __future__ import annotations

import threading

import pytest

from hookline.usecases.workers import Workers


def test_given_items_submitted_from_many_threads_when_running_ends_then_each_was_worked_on_once() -> None:
    done: list[int] = []
    lock = threading.Lock()

    def work(item: int) -> None:
        with lock:
            done.append(item)

    workers = Workers(work, 4)

    def submit_from(start: int) -> None:
        for n in range(250):
            workers.submit(start + n)

    with workers.running():
        submitters = [threading.Thread(target=submit_from, args=(start,)) for start in range(0, 1000, 250)]
        for thread in submitters:
            thread.start()
        for thread in submitters:
            thread.join()

    assert sorted(done) == list(range(1000))


def test_given_work_that_raises_when_items_follow_then_the_workers_go_on_and_the_failure_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done: list[int] = []

    def work(item: int) -> None:
        if item % 2:
            raise RuntimeError(f"item {item} failed")
        done.append(item)

    workers = Workers(work, 1)
    with workers.running():
        for item in range(6):
            workers.submit(item)

    assert done == [0, 2, 4]
    failures = [str(record.exc_info[1]) for record in caplog.records if record.exc_info]
    assert failures == ["item 1 failed", "item 3 failed", "item 5 failed"]


def test_given_workers_not_running_when_submitted_then_refused() -> None:
    workers: Workers[int] = Workers(lambda item: None, 2)
    with pytest.raises(RuntimeError):
        workers.submit(1)
    with workers.running():
        workers.submit(1)
    with pytest.raises(RuntimeError):
        workers.submit(2)


def test_given_workers_running_then_their_threads_are_named_after_the_pool() -> None:
    names: list[str] = []
    workers: Workers[int] = Workers(
        lambda item: names.append(threading.current_thread().name), 1, name="deliver"
    )
    with workers.running():
        workers.submit(0)

    assert names == ["deliver_0"]


def test_given_work_that_raises_a_base_exception_when_running_then_it_ends_the_worker_instead_of_being_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Halt(BaseException):
        """Stands for SystemExit or KeyboardInterrupt: no failure of one item."""

    escaped: list[type[BaseException]] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_type))

    def work(item: int) -> None:
        raise Halt

    workers = Workers(work, 1)
    with workers.running():
        workers.submit(0)

    assert escaped == [Halt]
    assert [record for record in caplog.records if record.exc_info] == []
