"""Eager tasks overlapping in threads leave Celery's "a task is running here" flag set; the
suite's autouse fixture (support/fixtures_celery.py) clears it before each test."""

import threading

from celery import Celery
from celery._state import task_join_will_block

from tests.support.fixtures_celery import _results_can_be_waited_on


def _overlap_two_eager_tasks() -> None:
    """`first` starts, `second` starts, `first` ends, then `second`: the order the live
    server's threads can run two requests' eager tasks in."""
    app = Celery(set_as_current=False)
    app.conf.task_always_eager = True
    first_started, second_started, first_done = (threading.Event() for _ in range(3))

    @app.task
    def first():
        first_started.set()
        assert second_started.wait(5)

    @app.task
    def second():
        second_started.set()
        assert first_done.wait(5)

    def run_first():
        first.delay()
        first_done.set()

    threads = [threading.Thread(target=run_first), threading.Thread(target=second.delay)]
    threads[0].start()
    assert first_started.wait(5)
    threads[1].start()
    for thread in threads:
        thread.join(10)


def test_overlapping_eager_tasks_leave_the_flag_set_and_the_fixture_clears_it():
    assert not task_join_will_block()  # the fixture ran before this test
    _overlap_two_eager_tasks()
    assert task_join_will_block()  # what a later test in this process would have found
    _results_can_be_waited_on.__wrapped__()
    assert not task_join_will_block()
