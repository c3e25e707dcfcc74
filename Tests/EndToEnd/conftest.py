import pytest

from devstack import DevStack


@pytest.fixture(scope="session")
def stack():
    running = DevStack()
    yield running
    running.stop()
