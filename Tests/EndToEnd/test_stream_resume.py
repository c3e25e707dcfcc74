"""A browser's own EventSource resuming a device's stream that lies far back in a busy log: the relay answers one
bounded read at a time, the last answer of a read that found nothing more ends with a bare `id:` line, and the browser
takes its position from it and comes back from there, receiving each event once."""
import http.client
import json
import time
import uuid

from devstack import DevStack
from test_dashboard import browser


def wait_for_event(stack, channel, timeout=60):
    """Opens a live stream on `channel` and returns a function that waits for its first event."""
    connection = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=timeout)
    connection.request("GET", f"/v1/stream?channel={channel}", headers={"Authorization": f"Bearer {stack.token}"})
    response = connection.getresponse()
    assert response.status == 200

    def wait():
        while True:
            line = response.readline().decode()
            assert line, "the stream ended"
            if line.startswith("data: "):
                connection.close()
                return json.loads(line[6:])
    return wait


def test_a_browser_resumes_a_sparse_stream_across_bounded_reads_and_gets_each_event_once():
    stack = DevStack()
    driver = browser()
    try:
        device, marker = str(uuid.uuid4()), str(uuid.uuid4())
        start = stack.sql("SELECT coalesce(max(seq), 0) FROM broadcast_log")[0][0]
        message = ("INSERT INTO device_live_activity_message (device_uuid, message) VALUES (%s, %s) "
                   "ON CONFLICT (device_uuid) DO UPDATE SET message = excluded.message")
        marker_seen = wait_for_event(stack, f"device:{marker}")
        stack.sql(message, (device, "before"))
        stack.sql("INSERT INTO broadcast_log (channels, event, data) SELECT ARRAY['device:someone-else'], "
                  "'live-activity-message', '{}' FROM generate_series(1, 120000)")
        stack.sql(message, (device, "after"))
        stack.sql(message, (marker, "read"))
        marker_seen()  # the relay has read the whole log up to here

        driver.get(stack.base + "/")
        driver.execute_script("""
            window.got = [];
            const source = new EventSource(`/v1/stream?channel=device:${arguments[0]}&access_token=${arguments[1]}`
                                           + `&lastEventId=${arguments[2]}`);
            source.addEventListener('live-activity-message',
                                    event => window.got.push([event.lastEventId, JSON.parse(event.data).message]));
            """, device, stack.token, start)
        def received(text):
            deadline, got = time.time() + 30, []
            while time.time() < deadline:
                got = driver.execute_script("return window.got")
                if any(seen == text for _, seen in got):
                    return got
                time.sleep(0.2)
            raise AssertionError(f"no {text!r} in the browser; it has {got}")

        received("after")
        # Caught up, the stream is live: the next write comes on it, and nothing came twice before it.
        stack.sql(message, (device, "live"))
        got = received("live")
        assert [text for _, text in got] == ["before", "after", "live"], got
        assert int(got[1][0]) > int(got[0][0]) + 100_000, got
    finally:
        driver.quit()
        stack.stop()
