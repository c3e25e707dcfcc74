"""The naive peer that ./Benchmarks/run measures LiveRelay against, in the same run, on the same PostgreSQL cluster
and the same h2o endpoint: asyncpg LISTEN woken by a per-row NOTIFY trigger (Benchmarks/naive_peer.sql), batches
claimed with `FOR UPDATE SKIP LOCKED` and deleted in the claim's transaction, pushes sent over one HTTP/2 connection
(httpx) side by side, the transaction committed when every answer is in. Run several processes for more cores.

    python3 Benchmarks/naive_peer.py --dsn postgresql://... --apns https://127.0.0.1:PORT --ca cert.pem
"""
import argparse
import asyncio
import signal
import time

import asyncpg
import httpx

CLAIM = """
    DELETE FROM peer_outbox o USING activity_registration a
    WHERE o.id IN (SELECT id FROM peer_outbox ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) AND a.id = o.activity_id
    RETURNING a.activity_token, a.bundle_id, a.content_state::text
"""


async def run(args):
    listener = await asyncpg.connect(args.dsn)
    worker = await asyncpg.connect(args.dsn)
    claim = await worker.prepare(CLAIM)
    wake = asyncio.Event()
    await listener.add_listener("peer_push", lambda *_: wake.set())
    client = httpx.AsyncClient(http2=True, verify=args.ca, base_url=args.apns, timeout=10)
    # A provider token made once; the benchmark's endpoint does not verify it.
    headers = {"authorization": "bearer peer.jwt.token", "apns-push-type": "liveactivity", "apns-priority": "10"}

    async def send(token, bundle, state):
        body = '{"aps":{"timestamp":%d,"event":"update","content-state":%s}}' % (int(time.time()), state)
        answer = await client.post(f"/3/device/{token}", content=body,
                                   headers={**headers, "apns-topic": bundle + ".push-type.liveactivity"})
        return answer.status_code

    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    print("ready", flush=True)  # listening: the benchmark may write
    wake.set()  # whatever was queued before it started
    while not stopping.is_set():
        waiter = asyncio.ensure_future(wake.wait())
        stop = asyncio.ensure_future(stopping.wait())
        await asyncio.wait([waiter, stop], return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        stop.cancel()
        wake.clear()
        while not stopping.is_set():
            async with worker.transaction():
                rows = await claim.fetch(args.batch)
                if not rows:
                    break
                await asyncio.gather(*(send(*row) for row in rows), return_exceptions=True)
    await client.aclose()
    await listener.close()
    await worker.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--apns", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--batch", type=int, default=500)
    asyncio.run(run(parser.parse_args()))
