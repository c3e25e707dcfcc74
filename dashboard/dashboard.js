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

// ---- Live updates ----

const loaders = {
  devices: loadDevices, activities: loadActivities, channels: loadChannels, deliveries: loadDeliveries,
  webhooks: loadWebhooks, queue: loadQueue,
};
const everything = Object.keys(loaders);
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
  deliveries: ['deliveries', 'queue', 'activities', 'channels', 'webhooks'],
  // Some of what the page missed is gone from the stream: it reads everything again.
  resync: everything,
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
      if (lastEventID === null) refresh(...everything);
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
            // (The event was queued for the endpoints that take it.)
            refresh('activities', 'webhooks');
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
    refresh(...everything);
  }
}

// What no event announces: an app opening or closing its stream (the "app open" badge) and priority-10 pushes
// ageing out of the last hour. The activities are read again every 3 s while the page is signed in and shown.
setInterval(() => { if (stream && !document.hidden) refresh('activities'); }, 3000);

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
