// The dashboard's sections: each one's rows, read from the relay's API and drawn. Loaded before dashboard.js, which
// signs in, follows the stream and calls these loaders; they use its helpers (api, element, cell) when they run.
'use strict';

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
    cell('Platform', device.platform || '–'), cell('Tokens', tokens(device)),
    cell('Current message', element('span', { class: 'current', text: device.message || '–' })),
    cell('Live Activity message', form));
}

// A device with a message and no registration (a writer's row for a uuid no app registered yet) has no tokens.
function tokens(device) {
  return device.token_suffixes.map(suffix).join(', ') || '–';
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
    existing.cells[3].textContent = tokens(device);
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

// What the table was last drawn from: a read that finds the same (the periodic one, mostly) leaves it as it is.
let shownActivities = '';

async function loadActivities() {
  const activities = await api('/v1/live-activities?limit=100');
  const shown = JSON.stringify(activities);
  if (shown === shownActivities) return;
  shownActivities = shown;
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
    // Fields the relay has no value for are left out of its answer (a channel's send has no priority reason, a
    // coalesced row no latency).
    const reason = row.priority_reason ? ` (${row.priority_reason})` : '';
    return element('tr', { class: row.status === 'failed' ? 'failed' : null },
      cell('Time', time(row.created_at)),
      cell('Status', element('span', { class: 'badge status-' + row.status, text: row.status })),
      cell('Event', row.priority ? `${row.event_type} · p${row.priority}${reason}` : row.event_type),
      cell('Session', subject(row)),
      cell('Transport', row.transport || '–'),
      cell('Answer', answer || '–'),
      cell('Latency', typeof row.latency_ms === 'number' ? row.latency_ms.toFixed(1) + ' ms' : '–'));
  }));
  $('deliveries-empty').hidden = deliveries.length > 0;
}

// What a delivery was for: an activity's session, a channel, or a widget token (a reload names no session).
function subject(row) {
  if (row.session_id) return row.session_id;
  if (row.channel) return 'channel ' + row.channel;
  if (row.push_type === 'widgets') return 'widgets of token ' + suffix(row.token_suffix);
  return '–';
}

// ---- Webhooks ----

const ALL_EVENTS = 6;
// A receiver that takes an event at the first attempt leaves nothing on the stream: while an enabled endpoint has
// events waiting, the list is read again every two seconds, until none waits (a paused one's wait for Resume).
let webhooksRecheck = null;

async function loadWebhooks() {
  const endpoints = await api('/v1/webhooks');
  $('webhooks-rows').replaceChildren(...endpoints.map((endpoint) => {
    const events = endpoint.events.length === ALL_EVENTS
      ? 'all' : endpoint.events.map((name) => name.replace('live_activity.', '')).join(', ');
    const since = (endpoint.oldest_pending_at ? ` since ${time(endpoint.oldest_pending_at)}` : '')
      + (endpoint.next_attempt_at ? `, next try ${time(endpoint.next_attempt_at)}` : '');
    const toggle = element('button', { type: 'button', class: 'secondary', text: endpoint.enabled ? 'Pause' : 'Resume',
      onclick: () => setWebhookEnabled(endpoint.id, !endpoint.enabled) });
    return element('tr', { 'data-id': endpoint.id },
      cell('Endpoint', element('code', { text: endpoint.url })),
      cell('Events', events),
      cell('Status', element('span', { class: 'badge status-' + (endpoint.enabled ? 'active' : 'paused'),
        text: endpoint.enabled ? 'enabled' : 'paused' })),
      cell('Waiting', `${endpoint.pending || 0}${since}`),
      cell('Last error', endpoint.last_error || '–'),
      cell('Actions', toggle));
  }));
  $('webhooks-empty').hidden = endpoints.length > 0;
  clearTimeout(webhooksRecheck);
  if (endpoints.some((endpoint) => endpoint.enabled && endpoint.pending > 0)) {
    webhooksRecheck = setTimeout(() => refresh('webhooks'), 2000);
  }
}

async function setWebhookEnabled(id, enabled) {
  try {
    await api('/v1/webhooks/' + encodeURIComponent(id), {
      method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ enabled }) });
    refresh('webhooks');
  } catch (error) { $('live').textContent = (enabled ? 'Resume' : 'Pause') + ' failed: ' + error.message; }
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
