// LiveRelay's dashboard. Everything goes through the relay's public API with the admin token, which is kept in
// sessionStorage (this tab only) and sent in the Authorization header, never in a URL. The page follows every
// channel over SSE (read with fetch, so the token stays in a header) and re-reads what an event changed.
'use strict';

const TOKEN_KEY = 'liverelay-admin-token';
const $ = (id) => document.getElementById(id);
let token = '';
let stream = null;

// A link from `liverelay dev` carries the token in the fragment (#token=…), which browsers never send: keep it for
// this tab and remove it from the address bar.
const fromLink = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromLink) {
  sessionStorage.setItem(TOKEN_KEY, fromLink);
  history.replaceState(null, '', location.pathname + location.search);
}

async function api(path, options = {}) {
  const headers = Object.assign({ Authorization: 'Bearer ' + token }, options.headers || {});
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) { signOut('The relay refused the token; sign in again.'); throw new Error('401'); }
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error((body && body.error) || response.statusText);
  return body;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'text') node.textContent = value;
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

const cell = (label, ...children) => element('td', { 'data-label': label }, ...children);
const time = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '–');
const suffix = (text) => (text ? '…' + text : '–');

// ---- Devices ----

function deviceRow(device) {
  const uuid = device.device_uuid;
  const input = element('input', { type: 'text', id: 'message-' + uuid, maxlength: 4096, autocomplete: 'off' });
  input.value = device.message || '';
  const status = element('span', { class: 'row-status', role: 'status' });
  const send = async (message) => {
    status.textContent = 'Sending…';
    try {
      await api('/rest/v1/device_live_activity_message', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Prefer: 'resolution=merge-duplicates' },
        body: JSON.stringify({ device_uuid: uuid, message, updated_by: 'dashboard' }),
      });
      input.dataset.dirty = '';
      status.textContent = message ? 'Sent' : 'Cleared';
    } catch (error) {
      status.textContent = error.message;
    }
  };
  input.addEventListener('input', () => { input.dataset.dirty = 'yes'; });
  input.addEventListener('keydown', (event) => { if (event.key === 'Enter') send(input.value); });
  const form = element('div', { class: 'message' },
    element('label', { for: input.id, class: 'visually-hidden', text: 'Message' }), input,
    element('button', { type: 'button', onclick: () => send(input.value), text: 'Send' }),
    element('button', { type: 'button', class: 'secondary', text: 'Clear',
                        onclick: () => { input.value = ''; send(''); } }),
    status);
  return element('tr', { 'data-uuid': uuid },
    cell('Name', device.device_name || '–'), cell('Device', element('code', { text: uuid })),
    cell('Platform', device.platform || '–'), cell('Tokens', device.token_suffixes.map(suffix).join(', ')),
    cell('Current message', element('span', { class: 'current', text: device.message || '–' })),
    cell('Live Activity message', form));
}

async function loadDevices() {
  const devices = await api('/v1/devices?limit=200');
  const body = $('devices-rows');
  const rows = new Map([...body.children].map((row) => [row.dataset.uuid, row]));
  const ordered = devices.map((device) => {
    const existing = rows.get(device.device_uuid);
    if (!existing) return deviceRow(device);
    // Update in place: what someone is typing is kept.
    existing.querySelector('.current').textContent = device.message || '–';
    const input = existing.querySelector('input');
    if (document.activeElement !== input && !input.dataset.dirty) input.value = device.message || '';
    existing.cells[0].textContent = device.device_name || '–';
    existing.cells[3].textContent = device.token_suffixes.map(suffix).join(', ');
    return existing;
  });
  body.replaceChildren(...ordered);
  $('devices-empty').hidden = devices.length > 0;
}

// ---- Activities ----

function contentState(state) {
  if (!state || typeof state !== 'object') return element('span', { text: '–' });
  const list = element('dl', { class: 'state' });
  for (const [key, value] of Object.entries(state)) {
    list.append(element('dt', { text: key }),
      element('dd', { text: typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value) }));
  }
  return list;
}

function lastDelivery(delivery) {
  if (!delivery) return element('span', { text: 'none yet' });
  const latency = delivery.latencyMs === null || delivery.latencyMs === undefined
    ? '' : ` in ${delivery.latencyMs.toFixed(1)} ms`;
  const reason = delivery.reason ? ` (${delivery.reason})` : '';
  return element('span', { class: 'status-' + delivery.status,
    text: `${delivery.status} ${delivery.eventType}${latency}${reason}, ${time(delivery.at)}` });
}

async function loadActivities() {
  const activities = await api('/v1/live-activities?limit=100');
  $('activities-rows').replaceChildren(...activities.map((activity) => {
    const end = activity.status === 'active'
      ? element('button', { type: 'button', class: 'secondary', text: 'End',
                            onclick: () => endActivity(activity.id) })
      : null;
    return element('tr', { 'data-id': activity.id },
      cell('Session', element('code', { text: activity.sessionId }), element('br'),
        element('small', { text: `${activity.platform}${activity.deviceUUID ? ' · ' + activity.deviceUUID : ''}` })),
      cell('Status', element('span', { class: 'badge status-' + activity.status, text: activity.status }),
        // Its app is open (a stream of its device or session): updates go at priority 5, or not at all.
        activity.foreground ? element('span', { class: 'badge foreground', text: 'app open' }) : ''),
      cell('Content state', contentState(activity.contentState)),
      cell('Last delivery', lastDelivery(activity.lastDelivery)),
      cell('Priority 10, last hour', budget(activity)),
      cell('Actions', end));
  }));
  $('activities-empty').hidden = activities.length > 0;
}

// Broadcast channels: state, last send and the platforms a write reaches (Apple's id once it exists).
async function loadChannels() {
  const channels = await api('/v1/channels?limit=100');
  $('channels-rows').replaceChildren(...channels.map((channel) => element('tr', { 'data-name': channel.name },
    cell('Channel', element('code', { text: channel.name }), element('br'),
      element('small', {
        text: channel.apnsChannelId ? 'Apple id ' + channel.apnsChannelId : 'not created at Apple yet' })),
    cell('Status', element('span', { class: 'badge status-' + channel.status, text: channel.status }),
      channel.error ? element('small', { text: ' ' + channel.error }) : ''),
    cell('Content state', contentState(channel.contentState)),
    cell('Last send', lastDelivery(channel.lastSend && { ...channel.lastSend,
      eventType: `${channel.lastSend.eventType} · ${channel.lastSend.transport || 'not sent'}` })),
    cell("Subscribers' platforms", element('span', { text: channel.platforms.join(' + ') })))));
  $('channels-empty').hidden = channels.length > 0;
}

// The update budget: priority-10 pushes this hour against the limit, and its level (past it, updates go at 5).
function budget(activity) {
  const label = `${activity.priority10LastHour} / ${activity.priority10Limit}`;
  const state = activity.budgetState;
  return element('span', {},
    element('span', { text: label }), ' ',
    element('span', { class: 'badge budget-' + state, text: state === 'downgraded' ? 'at priority 5' : state }),
    activity.awaitingToken ? element('small', { text: ' · waiting for its token' }) : '');
}

async function endActivity(id) {
  try { await api('/v1/live-activities/' + encodeURIComponent(id), { method: 'DELETE' }); }
  catch (error) { $('live').textContent = 'End failed: ' + error.message; }
}

// ---- Deliveries ----

async function loadDeliveries() {
  const query = new URLSearchParams({ limit: '100' });
  if ($('filter-status').value) query.set('status', $('filter-status').value);
  if ($('filter-transport').value) query.set('transport', $('filter-transport').value);
  const deliveries = await api('/v1/deliveries?' + query);
  $('deliveries-rows').replaceChildren(...deliveries.map((row) => {
    const answer = [row.provider_status, row.provider_reason || row.error].filter((part) => part).join(' ');
    return element('tr', { class: row.status === 'failed' ? 'failed' : null },
      cell('Time', time(row.created_at)),
      cell('Status', element('span', { class: 'badge status-' + row.status, text: row.status })),
      cell('Event', row.priority ? `${row.event_type} · p${row.priority} (${row.priority_reason})` : row.event_type),
      cell('Session', row.session_id || (row.channel ? 'channel ' + row.channel : '–')),
      cell('Transport', row.transport || '–'),
      cell('Answer', answer || '–'),
      cell('Latency', row.latency_ms === null ? '–' : row.latency_ms.toFixed(1) + ' ms'));
  }));
  $('deliveries-empty').hidden = deliveries.length > 0;
}

// ---- Queue ----

function chart(sent, failed, seconds) {
  const svgNS = 'http://www.w3.org/2000/svg';
  const width = 300, height = 80;
  const peak = Math.max(1, ...sent.map((value, index) => value + failed[index]));
  const svg = document.createElementNS(svgNS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label',
    `Pushes per second: now ${(sent[sent.length - 1] / seconds).toFixed(1)}, peak ${(peak / seconds).toFixed(1)}`);
  const bar = width / sent.length;
  const rect = (x, y, h, kind) => {
    const node = document.createElementNS(svgNS, 'rect');
    node.setAttribute('x', x + 1); node.setAttribute('y', y);
    node.setAttribute('width', Math.max(1, bar - 2)); node.setAttribute('height', h);
    node.setAttribute('class', kind);
    svg.append(node);
  };
  sent.forEach((value, index) => {
    const sentHeight = (value / peak) * height, failedHeight = (failed[index] / peak) * height;
    rect(index * bar, height - sentHeight, sentHeight, 'sent');
    rect(index * bar, height - sentHeight - failedHeight, failedHeight, 'failed');
  });
  return svg;
}

async function loadQueue() {
  const queue = await api('/v1/queue');
  $('queue-queued').textContent = queue.queued;
  $('queue-due').textContent = queue.due;
  $('queue-retrying').textContent = queue.retrying;
  $('queue-oldest').textContent = queue.queued ? queue.oldest_seconds.toFixed(1) + ' s' : '–';
  $('queue-chart').replaceChildren(chart(queue.sent_per_bucket, queue.failed_per_bucket, queue.bucket_seconds));
}

// ---- Live updates ----

const loaders = {
  devices: loadDevices, activities: loadActivities, channels: loadChannels, deliveries: loadDeliveries,
  queue: loadQueue,
};
const pending = new Set();
let scheduled = null;

// Re-reads the sections an event touched, at most a few times a second however many events arrive.
function refresh(...sections) {
  sections.forEach((section) => pending.add(section));
  if (scheduled) return;
  scheduled = setTimeout(() => {
    const due = [...pending];
    pending.clear();
    scheduled = null;
    due.forEach((section) => loaders[section]().catch(showError));
  }, 100);
}

const affected = {
  'live-activity-message': ['devices', 'activities'],
  'activity-update': ['activities'],
  'activity-end': ['activities'],
  'channel-update': ['channels'],
  'channel-end': ['channels'],
  deliveries: ['deliveries', 'queue', 'activities', 'channels'],
};

// Lifecycle events (live_activity.*) as they come on the admin stream, newest first, the last 50.
function showLifecycle(name, data) {
  let event;
  try { event = JSON.parse(data); } catch { return; }
  const activity = (event.data && event.data.activity) || {};
  const delivery = event.data && event.data.delivery;
  const reason = delivery && delivery.reason ? ' ' + delivery.reason : '';
  const detail = delivery ? ` · ${delivery.transport} ${delivery.status}${reason}` : '';
  const item = element('li', { 'data-type': name },
    time(event.created_at), ' ', element('span', { class: 'badge event', text: name.replace('live_activity.', '') }),
    ' ', element('code', { text: activity.session_id || activity.id || '' }), detail);
  const list = $('lifecycle-rows');
  list.prepend(item);
  while (list.children.length > 50) list.lastChild.remove();
  $('lifecycle-empty').hidden = true;
}

async function follow() {
  let lastEventID = null;
  let delay = 500;
  const controller = new AbortController();
  stream = controller;
  while (!controller.signal.aborted) {
    try {
      const headers = { Authorization: 'Bearer ' + token, Accept: 'text/event-stream' };
      if (lastEventID) headers['Last-Event-ID'] = lastEventID;
      const response = await fetch('/v1/stream?channel=*', { headers, signal: controller.signal });
      if (response.status === 401) { signOut('The relay refused the token; sign in again.'); return; }
      if (!response.ok) throw new Error('stream answered ' + response.status);
      $('live').textContent = 'Live';
      delay = 500;
      if (lastEventID === null) refresh('devices', 'activities', 'channels', 'deliveries', 'queue');
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let name = 'message';
          let data = '';
          for (const line of frame.split('\n')) {
            if (line.startsWith('id: ')) lastEventID = line.slice(4);
            else if (line.startsWith('event: ')) name = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (affected[name]) refresh(...affected[name]);
          if (name.startsWith('live_activity.')) {
            showLifecycle(name, data);
            refresh('activities');
          }
        }
      }
    } catch (error) {
      if (controller.signal.aborted) return;
    }
    $('live').textContent = 'Reconnecting…';
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 10000);
    // Whatever happened while the stream was down is re-read once it is back.
    refresh('devices', 'activities', 'channels', 'deliveries', 'queue');
  }
}

function showError(error) {
  if (error.message !== '401') $('live').textContent = 'Error: ' + error.message;
}

// ---- Signing in and out ----

async function signIn(candidate) {
  token = candidate;
  try {
    await api('/v1/devices?limit=1');
  } catch (error) {
    if (error.message !== '401') $('signin-error').textContent = 'Could not reach the relay: ' + error.message;
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  $('signin').hidden = true;
  $('app').hidden = false;
  $('signout').hidden = false;
  $('signin-error').textContent = '';
  $('live').textContent = 'Connecting…';
  follow();
}

function signOut(reason) {
  if (stream) stream.abort();
  stream = null;
  token = '';
  sessionStorage.removeItem(TOKEN_KEY);
  $('app').hidden = true;
  $('signout').hidden = true;
  $('signin').hidden = false;
  $('live').textContent = 'Signed out';
  $('signin-error').textContent = reason || '';
  $('token').value = '';
}

$('signin').addEventListener('submit', (event) => {
  event.preventDefault();
  signIn($('token').value.trim());
});
$('signout').addEventListener('click', () => signOut());
$('filter-status').addEventListener('change', () => refresh('deliveries'));
$('filter-transport').addEventListener('change', () => refresh('deliveries'));

const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) signIn(saved);
