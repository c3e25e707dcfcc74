"""The dashboard in a real browser (Debian's Chromium, headless, through chromedriver) against `liverelay dev`:
signing in, sending and clearing a device's message (seen at the APNs simulator), psql writes and a second window's
changes appearing without reload, phone width, and no console errors."""
import json
import os
import re
import time
import uuid

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from devstack import free_port
from test_webhooks import Receiver

IPHONE = "00000000-0000-4000-8000-000000000001"


def browser(width=1280, height=900):
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))
    driver.set_page_load_timeout(20)
    return driver


@pytest.fixture()
def page(stack):
    driver = browser()
    yield driver
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    driver.quit()
    assert errors == [], errors


def wait(driver, condition, timeout=5, message="", shown=None):
    """Polls `condition` past redrawn elements. `shown`, when given, names what the page shows in the failure: it is
    read after the wait failed (read before, it could be an element the page redrew meanwhile)."""
    def poll(check, seconds):
        return WebDriverWait(driver, seconds, poll_frequency=0.05,
                             ignored_exceptions=[StaleElementReferenceException]).until(lambda _: check(), message)
    try:
        return poll(condition, timeout)
    except TimeoutException:
        if shown is None:
            raise
        raise AssertionError(f"{message}; the page shows: {poll(lambda: shown() or '(nothing)', 5)}") from None


def snapshot(driver, read):
    """What `read()` returns, read again when the page redrew an element it was reading (an assertion outside `wait`
    must not meet a StaleElementReferenceException)."""
    return wait(driver, lambda: (read(),), message="a read of the page")[0]


def by_label(driver, label):
    """The control a <label> with this exact text names."""
    target = driver.find_element(By.XPATH, f"//label[normalize-space()='{label}']").get_attribute("for")
    return driver.find_element(By.ID, target)


def button(scope, name):
    found = [b for b in scope.find_elements(By.TAG_NAME, "button") if b.accessible_name == name and b.is_displayed()]
    assert found, f"no visible button named {name}"
    return found[0]


def press(driver, scope, name):
    """Clicks the visible button named `name` in `scope()`, found again when the page redraws it before the click (the
    tables are redrawn by every event and every 3 s read)."""
    def click():
        button(scope(), name).click()
        return True
    wait(driver, click, message=f"the button {name}")


def sign_in(driver, stack):
    driver.get(stack.base + "/")
    field = by_label(driver, "Admin token")
    assert field.get_attribute("type") == "password" and field.accessible_name == "Admin token"
    field.send_keys(stack.token)
    button(driver, "Sign in").click()
    wait(driver, lambda: device_row(driver, IPHONE) is not None, message="the demo iPhone's row")
    wait(driver, lambda: driver.find_element(By.ID, "live").text == "Live", message="the stream")


def device_row(driver, device):
    rows = [row for row in driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr") if device in row.text]
    return rows[0] if rows else None


def message_input(row):
    inputs = [element for element in row.find_elements(By.TAG_NAME, "input") if element.accessible_name == "Message"]
    assert len(inputs) == 1
    return inputs[0]


def note_of(push):
    return push["payload"]["aps"].get("content-state", {}).get("note", "missing")


def test_a_wrong_token_is_refused_and_nothing_is_shown(stack, page):
    page.get(stack.base + "/")
    by_label(page, "Admin token").send_keys("not-the-token")
    button(page, "Sign in").click()
    wait(page, lambda: "refused" in page.find_element(By.ID, "signin-error").text)
    assert not page.find_element(By.ID, "app").is_displayed()
    page.get_log("browser")  # the refused request's 401 is expected here


def test_sign_in_send_and_clear_a_message_and_see_the_push(stack, page):
    sign_in(page, stack)
    assert page.execute_script("return location.href").find(stack.token) < 0
    # A screen reader names each table by its section's heading.
    names = [table.accessible_name for table in page.find_elements(By.TAG_NAME, "table")]
    assert names == ["Devices", "Activities", "Channels", "Deliveries", "Webhooks"], names
    text = "Dashboard says hi " + uuid.uuid4().hex[:6]
    row = device_row(page, IPHONE)
    field = message_input(row)
    field.clear()
    field.send_keys(text)
    button(row, "Send").click()
    push = stack.wait_for_push(lambda push: note_of(push) == text)
    assert push["pushType"] == "liveactivity"
    assert stack.sql("SELECT updated_by FROM device_live_activity_message WHERE device_uuid = %s",
                     (IPHONE,)) == [("dashboard",)]
    wait(page, lambda: text in device_row(page, IPHONE).text, message="the current message")
    last = max(push["sequence"] for push in stack.pushes())
    button(device_row(page, IPHONE), "Clear").click()
    stack.wait_for_push(lambda push: push["sequence"] > last and note_of(push) is None)
    wait(page, lambda: text not in device_row(page, IPHONE).text, message="the message cleared")


def test_a_psql_update_appears_within_a_second(stack, page):
    sign_in(page, stack)
    marker = "from psql " + uuid.uuid4().hex[:6]
    state = json.dumps({"status": "working", "sessionTitle": "Demo", "lastMessage": marker, "retryInfo": None})
    started = time.time()
    stack.sql("UPDATE activity_registration SET content_state = %s::jsonb WHERE session_id = 'demo-session'", (state,))
    wait(page, lambda: marker in page.find_element(By.ID, "activities").text, timeout=1.0,
         message="the psql UPDATE on the page within a second")
    assert time.time() - started < 1.0


def test_a_second_window_sees_the_first_ones_change(stack, page):
    sign_in(page, stack)
    other = browser()
    try:
        sign_in(other, stack)
        text = "from the other tab " + uuid.uuid4().hex[:6]
        row = device_row(page, IPHONE)
        message_input(row).send_keys(text)
        button(row, "Send").click()
        wait(other, lambda: text in device_row(other, IPHONE).text, timeout=1.5, message="the other window")
        assert [entry for entry in other.get_log("browser") if entry["level"] == "SEVERE"] == []
    finally:
        other.quit()


def test_the_dev_link_signs_in_and_leaves_no_token_in_the_address_bar(stack, page):
    page.get(stack.dashboard_link)
    wait(page, lambda: device_row(page, IPHONE) is not None, message="signed in by the link")
    assert "token" not in page.execute_script("return location.href")
    assert page.execute_script("return sessionStorage.getItem('liverelay-admin-token')") == stack.token


def test_phone_width_has_no_sideways_scrolling(stack):
    driver = browser(390, 844)
    try:
        sign_in(driver, stack)
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
        row = device_row(driver, IPHONE)
        assert button(row, "Send").is_displayed() and message_input(row).is_displayed()
        if os.environ.get("DASHBOARD_SCREENSHOT"):
            driver.set_window_size(1280, 1000)
            # Two animation frames: the page has laid itself out at the new width before the picture.
            driver.execute_async_script("requestAnimationFrame(() => requestAnimationFrame(arguments[0]))")
            driver.save_screenshot(os.environ["DASHBOARD_SCREENSHOT"])
    finally:
        driver.quit()


def test_lifecycle_events_and_the_update_budget_show_live(stack, page):
    sign_in(page, stack)
    marker = "budget " + uuid.uuid4().hex[:6]
    state = json.dumps({"status": "working", "sessionTitle": "Demo", "lastMessage": marker, "retryInfo": None})
    stack.sql("UPDATE activity_registration SET content_state = %s::jsonb WHERE session_id = 'demo-session'", (state,))
    wait(page, lambda: "updated" in page.find_element(By.ID, "lifecycle-rows").text
         and "demo-session" in page.find_element(By.ID, "lifecycle-rows").text, timeout=5,
         message="the live_activity.updated event in the lifecycle list")
    def budget_shown():
        rows = [r.text for r in page.find_elements(By.CSS_SELECTOR, "#activities tbody tr") if "demo-session" in r.text]
        return bool(rows) and re.search(r"\d+ / 120", rows[0]) is not None and "ok" in rows[0]
    wait(page, budget_shown, timeout=5,
         message="the activity's priority-10 count against its limit, and its budget level")


def test_channels_show_their_state_last_send_and_platforms_live(stack, page):
    sign_in(page, stack)

    def channel_row():
        rows = [r.text for r in page.find_elements(By.CSS_SELECTOR, "#channels tbody tr") if "demo-match" in r.text]
        return rows[0] if rows else ""
    wait(page, lambda: "active" in channel_row() and "ios" in channel_row(), timeout=5,
         message="the demo channel with its status and platforms")
    minute = 60 + int(uuid.uuid4().int % 30)
    stack.sql("UPDATE broadcast_channel SET content_state = jsonb_build_object('home', 2, 'away', 2, 'minute', %s)"
              " WHERE name = 'demo-match'", (minute,))
    stack.wait_for_broadcast(lambda b: b["payload"]["aps"].get("content-state", {}).get("minute") == minute)
    wait(page, lambda: str(minute) in channel_row() and "sent update" in channel_row(), timeout=5,
         message="the channel's new state and its last send (sent, by the broadcast) on the page")
    assert "Apple id" in snapshot(page, channel_row)


def test_an_open_app_shows_and_its_updates_go_at_priority_5(stack, page):
    """The demo iPhone's app holds its own stream (its device token): the activity shows the app as open with no write
    to announce it, and an update reaches APNs at priority 5 with the reason on the page's delivery log; closed, the
    app is no longer shown open, again with no write."""
    sign_in(page, stack)
    status, minted, _ = stack.api("POST", f"/v1/devices/{IPHONE}/token", {})
    assert status == 200, minted

    def activity_row():
        # The demo's iPhone activity (the demo Android phone has one of the same session). The table is drawn again as
        # events arrive: a row read meanwhile raises StaleElementReferenceException, which `wait` polls past.
        rows = [r.text for r in page.find_elements(By.CSS_SELECTOR, "#activities tbody tr")
                if "demo-session" in r.text and IPHONE in r.text]
        return rows[0] if rows else ""
    wait(page, lambda: (row := activity_row()) and "app open" not in row, timeout=5,
         message="the activity shown, its app not open yet", shown=activity_row)
    app = stack.open_stream(f"device:{IPHONE}", token=minted["token"])
    try:
        # An app opening its stream is no event on the page's stream: the page reads the activities again every 3 s.
        wait(page, lambda: "app open" in activity_row(), timeout=8,
             message="the activity's app shown as open, with no write", shown=activity_row)
        marker = "open " + uuid.uuid4().hex[:6]
        state = json.dumps({"status": "working", "sessionTitle": "Demo", "lastMessage": marker, "retryInfo": None})
        stack.sql("UPDATE activity_registration SET content_state = %s::jsonb WHERE session_id = 'demo-session'",
                  (state,))
        push = stack.wait_for_push(lambda p: p["payload"]["aps"].get("content-state", {}).get("lastMessage") == marker)
        assert push["priority"] == "5", push
        wait(page, lambda: "p5 (foreground)" in page.find_element(By.TAG_NAME, "body").text, timeout=5,
             message="the push's priority and its reason in the delivery log")
    finally:
        app.close()
    wait(page, lambda: (row := activity_row()) and "app open" not in row, timeout=8,
         message="the activity shown, its app no longer open, with no write", shown=activity_row)


def test_the_delivery_log_draws_a_burst_and_a_channel_send_in_full(stack, page):
    """Rows folded into a push (which have no latency of their own) and a channel's sends (no priority reason) are
    drawn like any other row, and an activity's last delivery is the push, not a row folded into it."""
    sign_in(page, stack)
    marker = uuid.uuid4().hex[:6]
    update = "UPDATE activity_registration SET content_state = %s::jsonb WHERE session_id = 'demo-session'"
    states = [json.dumps({"status": "working", "sessionTitle": "Demo", "lastMessage": f"burst {marker} {n}",
                          "retryInfo": None}) for n in range(3)]
    # Three updates committed together: one push of the last state per phone, the two before it folded into it.
    stack.transaction([(update, (state,)) for state in states])
    last = f"burst {marker} 2"
    stack.wait_for_push(lambda p: p["payload"]["aps"].get("content-state", {}).get("lastMessage") == last)
    minute = 30 + int(uuid.uuid4().int % 30)
    stack.sql("UPDATE broadcast_channel SET content_state = jsonb_build_object('home', 1, 'away', 1, 'minute', %s)"
              " WHERE name = 'demo-match'", (minute,))
    stack.wait_for_broadcast(lambda b: b["payload"]["aps"].get("content-state", {}).get("minute") == minute)

    def deliveries():
        return page.find_element(By.ID, "deliveries-rows").text
    # A widget reload names no session: the row says whose widgets it reloaded.
    widget_token = uuid.uuid4().hex * 2
    widget_device = str(uuid.uuid4())
    registered = stack.api("POST", "/v1/device/register", {
        "secret": "dashboard-widgets-" + marker, "deviceToken": uuid.uuid4().hex * 2, "deviceUUID": widget_device,
        "widgetPushToken": widget_token})
    assert registered[0] == 200, registered
    stack.sql("INSERT INTO device_live_activity_message (device_uuid, message) VALUES (%s, 'widget test')",
              (widget_device,))
    wait(page, lambda: "coalesced" in deliveries() and "channel demo-match" in deliveries()
         and f"widgets of token …{widget_token[-8:]}" in deliveries(), timeout=5,
         message="the burst's folded rows, the channel's send and the widget reload in the delivery log",
         shown=lambda: page.find_element(By.ID, "live").text + " | " + deliveries())
    shown = snapshot(page, deliveries)
    for word in ("undefined", "null", "NaN"):
        assert word not in shown, shown
    assert snapshot(page, lambda: page.find_element(By.ID, "live").text) == "Live"

    def activity_row():
        rows = [r.text for r in page.find_elements(By.CSS_SELECTOR, "#activities tbody tr")
                if "demo-session" in r.text and IPHONE in r.text]
        return rows[0] if rows else ""
    wait(page, lambda: f"burst {marker} 2" in activity_row() and "sent update" in activity_row(), timeout=5,
         message="the activity's last delivery: the push that went", shown=activity_row)


def test_a_refusing_webhook_shows_why_and_is_paused_and_resumed_from_the_page(stack, page):
    """An endpoint whose receiver refuses connections shows its waiting event and the reason, live; Pause and Resume
    change it for the relay (what the API then says) and on the page."""
    sign_in(page, stack)
    url = f"http://127.0.0.1:{free_port()}/hook-{uuid.uuid4().hex[:6]}"
    status, created, _ = stack.api("POST", "/v1/webhooks", {"url": url, "events": ["live_activity.updated"]})
    assert status == 201, created

    def row():
        rows = [r for r in page.find_elements(By.CSS_SELECTOR, "#webhooks tbody tr") if url in r.text]
        return rows[0] if rows else None

    def row_text():
        found = row()
        return found.text if found else ""
    try:
        state = json.dumps({"status": "working", "sessionTitle": "Demo", "lastMessage": "hook " + url[-6:],
                            "retryInfo": None})
        stack.sql("UPDATE activity_registration SET content_state = %s::jsonb WHERE session_id = 'demo-session'",
                  (state,))
        def refused():
            text = row_text()
            return text if "Connection refused" in text and "enabled" in text else None
        # The row as it was when it first said so: every assertion reads that same text.
        text = wait(page, refused, timeout=10, message="the endpoint's waiting events and why they wait",
                    shown=row_text)
        assert re.search(r"\b[12] since .*, next try ", text), text
        assert "next attempt in" not in text, "a wait counted from the failure is stale once shown"
        press(page, row, "Pause")
        wait(page, lambda: "paused" in row_text(), timeout=5, message="the endpoint paused", shown=row_text)
        listed = {endpoint["id"]: endpoint for endpoint in stack.api("GET", "/v1/webhooks")[1]}
        assert listed[created["id"]]["enabled"] is False
        press(page, row, "Resume")
        wait(page, lambda: "enabled" in row_text() and "Pause" in row_text(), timeout=5,
             message="the endpoint resumed", shown=row_text)
    finally:
        stack.api("DELETE", f"/v1/webhooks/{created['id']}")


def test_a_webhook_event_taken_at_the_first_attempt_leaves_the_waiting_count(stack, page):
    """A receiver that answers after a second: the page shows the event waiting, then, with no other event on the
    stream (a first-attempt success announces nothing), nothing waiting."""
    sign_in(page, stack)
    receiver = Receiver(delay=1.5)
    url = f"http://127.0.0.1:{receiver.server_address[1]}/slow-{uuid.uuid4().hex[:6]}"
    status, created, _ = stack.api("POST", "/v1/webhooks", {"url": url, "events": ["live_activity.updated"]})
    assert status == 201, created

    def waiting():
        rows = [r for r in page.find_elements(By.CSS_SELECTOR, "#webhooks tbody tr") if url in r.text]
        return rows[0].find_element(By.CSS_SELECTOR, "td[data-label='Waiting']").text if rows else ""
    try:
        state = json.dumps({"status": "working", "sessionTitle": "Demo", "lastMessage": "slow " + url[-6:],
                            "retryInfo": None})
        stack.sql("UPDATE activity_registration SET content_state = %s::jsonb WHERE session_id = 'demo-session'",
                  (state,))
        # The demo session has an iPhone's and an Android phone's activity: one event each.
        wait(page, lambda: re.match(r"[12] since ", waiting()), timeout=10, message="the events waiting",
             shown=waiting)
        receiver.wait(lambda items: len(items) >= 2)
        wait(page, lambda: waiting() == "0", timeout=6, message="nothing waiting once the receiver took it",
             shown=waiting)
    finally:
        stack.api("DELETE", f"/v1/webhooks/{created['id']}")
        receiver.shutdown()


def test_a_long_last_delivery_never_breaks_the_content_states_words(stack, page):
    """A retrying push's last delivery is a long sentence; beside it, each word of an activity's content-state stays
    whole (the column used to shrink until 'working' read 'wor' / 'king')."""
    page.set_window_size(1024, 900)
    sign_in(page, stack)
    marker = "wide" + uuid.uuid4().hex[:6]
    state = json.dumps({"status": "working", "sessionTitle": "Demo", "lastMessage": marker, "retryInfo": None})
    stack.set_faults(rate503=1)
    try:
        stack.sql("UPDATE activity_registration SET content_state = %s::jsonb WHERE session_id = 'demo-session'",
                  (state,))

        def rows():
            return [r.text for r in page.find_elements(By.CSS_SELECTOR, "#activities tbody tr") if marker in r.text]
        wait(page, lambda: any("retrying update" in row for row in rows()), timeout=10,
             message="the activity's retrying push as its last delivery", shown=lambda: " | ".join(rows()))
        split = page.execute_script("""
            return [...document.querySelectorAll('#activities .state dd')]
              .filter((dd) => !/\\s/.test(dd.textContent))
              .filter((dd) => { const r = document.createRange(); r.selectNodeContents(dd);
                                return r.getClientRects().length > 1; })
              .map((dd) => dd.textContent)""")
        assert split == [], f"content-state values broken across lines: {split}"
    finally:
        stack.set_faults()
