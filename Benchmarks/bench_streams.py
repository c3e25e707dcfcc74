"""B3: 10,000 open event streams, one write that reaches every one of them.

B3 itself gives every stream its own device (one statement writes 10,000 messages: 10,000 events, one per stream).
B3c is the broadcast case: the 10,000 streams follow one channel (`channel:<name>`, as the open apps of a game's
viewers do) and one `UPDATE broadcast_channel` is one event that every one of them is sent."""
import asyncio
import time
import uuid

from bench_stack import ADMIN_TOKEN, rss_kb
from bench_tools import Housekeeping, start_perf, stop_perf


class SSEClient(asyncio.Protocol):
    """One B3 stream reader: callbacks on the event loop, no coroutine per read, so that 10,000 of them in one Python
    process measure the relay rather than asyncio's stream readers (with those, a server that writes all 10,000 events
    in 110 ms is seen at p99 570 ms; with this, at 112 ms)."""

    def __init__(self, request, marker, on_connected, on_event):
        self.request, self.marker, self.on_connected, self.on_event = request, marker, on_connected, on_event
        self.buffer, self.state = b"", "waiting"

    def connection_made(self, transport):
        transport.write(self.request)

    def data_received(self, data):
        self.buffer += data
        if self.state == "waiting" and b": connected" in self.buffer:
            self.state, self.buffer = "connected", self.buffer[self.buffer.index(b": connected"):]
            self.on_connected()
        if self.state == "connected" and self.marker in self.buffer:
            self.state = "received"
            self.on_event(time.time())


async def bench_b3_async(stack, clients, out, channel=None):
    """`channel`: B3c, every stream follows that broadcast channel (created at the endpoint); else one device each."""
    devices = [str(uuid.UUID(int=i + 1)) for i in range(clients)]
    follows = [f"channel:{channel}"] * clients if channel else [f"device:{device}" for device in devices]
    marker = b"event: channel-update" if channel else b"event: live-activity-message"
    loop = asyncio.get_running_loop()
    received, connected = [], 0
    all_connected, all_received = asyncio.Event(), asyncio.Event()
    gate = asyncio.Semaphore(256)

    def on_connected():
        nonlocal connected
        connected += 1
        if connected == clients:
            all_connected.set()

    def on_event(at):
        received.append(at)
        if len(received) == clients:
            all_received.set()

    transports = []

    async def connect(follow):
        request = (f"GET /v1/stream?channel={follow} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   f"Authorization: Bearer {ADMIN_TOKEN}\r\n\r\n").encode()
        async with gate:
            transport, _ = await loop.create_connection(lambda: SSEClient(request, marker, on_connected, on_event),
                                                        "127.0.0.1", stack.http_port)
            transports.append(transport)

    # How long the 10,000 take to connect (a reconnect storm, as after a relay's restart), and the CPU it costs.
    connect_started, cpu_before = time.time(), stack.cpu_seconds()
    connecting = [asyncio.create_task(connect(follow)) for follow in follows]
    try:
        await asyncio.wait_for(all_connected.wait(), 120)
    except asyncio.TimeoutError:
        pass
    connect_seconds = time.time() - connect_started
    connect_cpu = [after - before for before, after in zip(cpu_before, stack.cpu_seconds())]
    await asyncio.sleep(1)  # the last connections' set-up ends before the relay's memory is read
    rss_connected = rss_kb(stack.relay.pid, "VmRSS") / 1024
    # BENCH_PERF=B3 profiles the relay from the write until every client has the event.
    perf = start_perf(stack, out, "B3c" if channel else "B3", 4999)
    # What PostgreSQL's upkeep runs meanwhile (autovacuum of broadcast_log after the bulk scenarios, say).
    upkeep = Housekeeping(stack)
    started = time.time()
    if channel:
        await asyncio.to_thread(stack.sql, "UPDATE broadcast_channel SET content_state = '{\"score\": \"1-0\"}' "
                                "WHERE name = %s", (channel,))
    else:
        await asyncio.to_thread(stack.sql, "INSERT INTO device_live_activity_message (device_uuid, message) "
                                "SELECT unnest(%s::uuid[]), 'b3'", (devices,))
    committed = time.time()
    try:
        await asyncio.wait_for(all_received.wait(), 60)
    except asyncio.TimeoutError:
        pass
    stop_perf(perf)
    housekeeping = upkeep.stop()
    for task in connecting:
        task.cancel()
    # The clients stay connected while the event is measured, as open apps do; they leave together afterwards.
    for transport in transports:
        transport.close()
    latencies = [(t - committed) * 1000 for t in received]
    return {"clients": clients, "connected": connected, "received": len(received),
            "statement_seconds": committed - started, "latencies_ms": latencies,
            "connect_seconds": connect_seconds, "connect_cpu_seconds": {"relay": connect_cpu[0],
                                                                        "postgres": connect_cpu[1]},
            "relay_rss_connected_mb": rss_connected, "relay_peak_rss_mb": rss_kb(stack.relay.pid, "VmHWM") / 1024,
            "housekeeping": housekeeping}


def bench_b3(stack, clients, out, channel=None):
    return asyncio.run(bench_b3_async(stack, clients, out, channel))
