"""Task names are what queued messages and beat's stored schedule hold: moving code keeps them."""

from celery import current_app

from core import outbox


def test_the_infrastructure_tasks_keep_the_names_they_were_queued_under():
    names = {"portal.tasks.clear_expired_sessions", "portal.tasks.outbox_send_task",
             "portal.tasks.outbox_sweep_task"}
    assert names <= set(current_app.tasks)
    assert outbox.SEND_TASK in names
