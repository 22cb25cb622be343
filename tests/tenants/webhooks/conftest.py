import pytest

from tests.support.webhooks import SECRET, start_receiver


@pytest.fixture(autouse=True)
def _localhost_allowed(settings):
    """The test receiver listens on 127.0.0.1, over HTTP: allowed for tests only."""
    settings.WEBHOOK_ALLOW_INSECURE_LOCALHOST = True


@pytest.fixture(scope="module")
def _receiver_server():
    receiver, stop = start_receiver()
    yield receiver
    stop()


@pytest.fixture
def receiver(_receiver_server):
    """The module's receiver, emptied and answering 200 for each test."""
    _receiver_server.received.clear()
    _receiver_server.answers = [200]
    _receiver_server.body = None
    _receiver_server.secret = SECRET
    return _receiver_server
