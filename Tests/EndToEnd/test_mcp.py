"""The MCP tools through the official Python `mcp` client, over Streamable HTTP (POST /mcp) and stdio
(`liverelay mcp`), against `liverelay dev`: rows written, SSE events seen, pushes received by the APNs simulator."""
import asyncio
import json
import os
import re
import time
import urllib.request
import uuid

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # mcp 2.x
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    def http_client(url, token):
        return streamable_http_client(url, http_client=create_mcp_http_client(
            headers={"Authorization": "Bearer " + token}))
except ImportError:  # mcp 1.x
    from mcp.client.streamable_http import streamablehttp_client

    def http_client(url, token):
        return streamablehttp_client(url, headers={"Authorization": "Bearer " + token})

IPHONE = "00000000-0000-4000-8000-000000000001"


def field(model, name):
    """A field of the client's models by its MCP name (mcp 1.x) or its snake_case name (mcp 2.x)."""
    snake = re.sub(r"([A-Z])", lambda match: "_" + match.group(1).lower(), name)
    return getattr(model, snake) if hasattr(model, snake) else getattr(model, name)


def over_http(stack, work):
    async def run():
        async with http_client(stack.base + "/mcp", stack.token) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                return await work(session)
    return asyncio.run(run())


def over_stdio(stack, work):
    async def run():
        parameters = StdioServerParameters(command=stack.binary, args=["mcp"], env=dict(
            os.environ, DATABASE_URL=stack.database_url, LIVERELAY_SQL_DIR=os.path.dirname(stack.binary)))
        async with stdio_client(parameters) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)
    return asyncio.run(run())


def text(result):
    return "\n".join(part.text for part in result.content if part.type == "text")


def call(stack, name, arguments, transport=over_http):
    async def work(session):
        return await session.call_tool(name, arguments)
    return transport(stack, work)


def note_of(push):
    return push["payload"]["aps"].get("content-state", {}).get("note")


def test_without_the_admin_token_is_401_with_bearer_challenge(stack):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    for token in (None, "wrong-token"):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if token:
            headers["Authorization"] = "Bearer " + token
        request = urllib.request.Request(stack.base + "/mcp", data=body, headers=headers, method="POST")
        with pytest.raises(urllib.error.HTTPError) as failure:
            urllib.request.urlopen(request, timeout=10)
        assert failure.value.code == 401
        assert failure.value.headers["WWW-Authenticate"].startswith("Bearer")


def test_tools_are_listed_with_schemas_and_read_only_hints(stack):
    async def work(session):
        return (await session.list_tools()).tools
    tools = {tool.name: tool for tool in over_http(stack, work)}
    assert set(tools) == {"set_live_activity_message", "get_live_activity_message", "list_devices",
                          "list_live_activities", "update_live_activity", "end_live_activity", "recent_deliveries",
                          "list_channels", "update_channel"}
    for name in ("get_live_activity_message", "list_devices", "list_live_activities", "recent_deliveries",
                 "list_channels"):
        assert field(tools[name].annotations, "readOnlyHint") is True, name
    assert field(tools["set_live_activity_message"].annotations, "readOnlyHint") is not True
    schema = field(tools["set_live_activity_message"], "inputSchema")
    assert {"device_uuid", "deviceName", "message"} <= set(schema["properties"]) and schema["required"] == ["message"]
    assert "Example" in tools["update_live_activity"].description


def test_set_by_uuid_writes_the_row_streams_the_event_and_pushes_the_note(stack):
    events = stack.open_stream("device:" + IPHONE)
    result = call(stack, "set_live_activity_message", {"device_uuid": IPHONE, "message": "Dinner at 7"})
    assert not field(result, "isError"), text(result)
    assert stack.sql("SELECT message, updated_by FROM device_live_activity_message WHERE device_uuid = %s",
                     (IPHONE,)) == [("Dinner at 7", "mcp")]
    assert events("live-activity-message", lambda data: data["message"] == "Dinner at 7")["device_uuid"] == IPHONE
    events.close()
    push = stack.wait_for_push(lambda push: note_of(push) == "Dinner at 7")
    assert push["pushType"] == "liveactivity"
    got = call(stack, "get_live_activity_message", {"device_uuid": IPHONE})
    assert "Dinner at 7" in text(got) and field(result, "structuredContent")["message"] == "Dinner at 7"


def test_set_by_name_over_stdio_and_read_back(stack):
    result = call(stack, "set_live_activity_message", {"deviceName": "demo iphone", "message": "From stdio"},
                  transport=over_stdio)
    assert not field(result, "isError"), text(result)
    stack.wait_for_push(lambda push: note_of(push) == "From stdio")
    got = call(stack, "get_live_activity_message", {"deviceName": "Demo iPhone"}, transport=over_stdio)
    assert "From stdio" in text(got)
    listed = call(stack, "list_devices", {}, transport=over_stdio)
    # (A device registered without a name, as other tests' are, has none.)
    names = {device.get("device_name") for device in field(listed, "structuredContent")["devices"]}
    assert {"Demo iPhone", "Demo Android"} <= names


def test_update_and_end_an_activity_and_see_the_deliveries(stack):
    session = "mcp-" + uuid.uuid4().hex[:8]
    token = uuid.uuid4().hex * 2
    status, created, _ = stack.api("POST", "/v1/live-activities", {
        "token": token, "externalId": session, "apnsEnv": "sandbox", "contentState": {"step": 1}})
    assert status == 201, created
    result = call(stack, "update_live_activity", {"session_id": session, "content_state": {"step": 2},
                                                  "alert": {"title": "Step 2", "body": "Halfway"}})
    assert not field(result, "isError"), text(result)
    push = stack.wait_for_push(lambda push: push["token"] == token and
                               push["payload"]["aps"].get("content-state") == {"step": 2})
    assert push["payload"]["aps"]["alert"]["title"] == "Step 2"
    ended = call(stack, "end_live_activity", {"id": created["id"], "dismissal_date": "2030-01-01T00:00:00Z"})
    assert not field(ended, "isError") and field(ended, "structuredContent")["status"] == "ended"
    stack.wait_for_push(lambda push: push["token"] == token and push["payload"]["aps"]["event"] == "end")
    listed = call(stack, "list_live_activities", {"status": "ended"})
    assert session in [activity["sessionId"] for activity in field(listed, "structuredContent")["activities"]]
    deliveries = call(stack, "recent_deliveries", {"session_id": session})
    assert "sent" in [row["status"] for row in field(deliveries, "structuredContent")["deliveries"]]


def test_channels_are_listed_and_one_update_reaches_apple_as_one_broadcast(stack):
    listed = call(stack, "list_channels", {"status": "active"})
    assert not field(listed, "isError"), text(listed)
    demo = next(c for c in field(listed, "structuredContent")["channels"] if c["name"] == "demo-match")
    assert demo["fcmTopic"] == "liverelay.demo-match"
    stack.wait_for_broadcast(lambda b: True, timeout=20)  # the seeded state, once Apple created the channel
    # ... and on the FCM topic (liverelay dev configures the FCM simulator).
    deadline = time.time() + 20
    while not stack.sql("SELECT count(*) FROM delivery_log WHERE channel = 'demo-match' AND transport = 'fcm-topic' "
                        "AND status = 'sent'")[0][0] and time.time() < deadline:
        time.sleep(0.1)
    assert stack.sql("SELECT count(*) FROM delivery_log WHERE channel = 'demo-match' AND transport = 'fcm-topic' "
                     "AND status = 'sent'")[0][0] >= 1
    channel_id = stack.sql("SELECT apns_channel_id FROM broadcast_channel WHERE name = 'demo-match'")[0][0]
    result = call(stack, "update_channel", {"name": "demo-match", "content_state": {"home": 3, "away": 1}})
    assert not field(result, "isError"), text(result)
    broadcast = stack.wait_for_broadcast(
        lambda b: b["payload"]["aps"].get("content-state") == {"home": 3, "away": 1})
    assert broadcast["channelID"] == channel_id and broadcast["pushType"] == "liveactivity"
    unknown = call(stack, "update_channel", {"name": "no-such-channel", "content_state": {"a": 1}})
    assert field(unknown, "isError") and "no channel" in text(unknown)
    empty = call(stack, "update_channel", {"name": "demo-match"})
    assert field(empty, "isError") and "content_state" in text(empty)


def test_refusals_are_tool_errors_and_write_nothing(stack):
    before = stack.sql("SELECT count(*), max(updated_at) FROM device_live_activity_message")
    stranger = str(uuid.uuid4())
    for code in ("a", "b"):
        status, body, _ = stack.api("POST", "/v1/device/register", {
            "secret": "twin-" + code, "deviceToken": uuid.uuid4().hex * 2, "deviceName": "Twin",
            "deviceUUID": str(uuid.uuid4())}, token=None)
        assert status == 200, body
    cases = [
        ("set_live_activity_message", {"device_uuid": stranger, "message": "x"}, "no device"),
        ("set_live_activity_message", {"deviceName": "Twin", "message": "x"}, "2 devices are named"),
        ("set_live_activity_message", {"device_uuid": IPHONE, "deviceName": "Demo iPhone", "message": "x"},
         "not both"),
        ("set_live_activity_message", {"message": "x"}, "device_uuid or deviceName"),
        ("set_live_activity_message", {"device_uuid": IPHONE, "message": "é" * 2100}, "4096"),
        ("update_live_activity", {"session_id": "demo-session", "content_state": [1, 2]}, "JSON object"),
        ("update_live_activity", {"session_id": "no-such-session", "content_state": {"a": 1}}, "no live activity"),
        ("end_live_activity", {}, "session_id or id"),
    ]
    for name, arguments, expected in cases:
        result = call(stack, name, arguments)
        assert field(result, "isError"), (name, arguments)
        assert expected in text(result), (expected, text(result))
    assert stack.sql("SELECT count(*), max(updated_at) FROM device_live_activity_message") == before


def test_over_stdio_an_unreachable_database_is_named_in_the_answer_and_not_logged_every_second(stack, tmp_path):
    # Port 1 of the database's host: nothing listens there, so every connection is refused.
    unreachable = re.sub(r"@([^:/]+):\d+/", r"@\1:1/", stack.database_url)
    errlog = open(tmp_path / "stderr.txt", "w+")

    async def run():
        parameters = StdioServerParameters(command=stack.binary, args=["mcp"], env=dict(
            os.environ, DATABASE_URL=unreachable, LIVERELAY_SQL_DIR=os.path.dirname(stack.binary)))
        async with stdio_client(parameters, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("list_devices", {})
    result = asyncio.run(run())
    assert field(result, "isError")
    host = re.search(r"@([^:/]+):\d+/", stack.database_url).group(1)
    assert text(result) == f"cannot connect to PostgreSQL at {host}:1: Connection refused", text(result)
    errlog.seek(0)
    assert "Connection creation failed" not in errlog.read()
