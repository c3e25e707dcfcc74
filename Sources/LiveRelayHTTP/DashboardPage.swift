/// The built-in dashboard: views, device messages and a live stream, all through the public API with the admin token.
enum DashboardPage {
    static let html = """
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8"><title>LiveRelay</title>
    <style>
      body { font: 14px system-ui, sans-serif; margin: 2rem; color: #222 }
      table { border-collapse: collapse; margin: .5rem 0 1.5rem } td, th { border: 1px solid #ddd; padding: 3px 6px; text-align: left }
      input { padding: 4px } button { padding: 4px 10px } pre { background: #f6f6f6; padding: .5rem; max-height: 16rem; overflow: auto }
    </style></head>
    <body>
    <h1>LiveRelay</h1>
    <p>Admin token <input id="token" type="password" size="40"> <button onclick="loadAll()">Load</button></p>
    <h2>Activities</h2><div id="activities"></div>
    <h2>Queue</h2><div id="queue_depth"></div>
    <h2>Recent deliveries</h2><div id="recent_deliveries"></div>
    <h2>Live Activity message</h2>
    <p>Device <input id="device" size="38" placeholder="device uuid"> message <input id="message" size="30">
       <button onclick="sendMessage()">Send</button> <button onclick="message.value='';sendMessage()">Clear</button></p>
    <h2>Stream</h2><p>Channel <input id="channel" size="48" placeholder="device:&lt;uuid&gt; or session:&lt;id&gt;">
       <button onclick="listen()">Listen</button></p><pre id="events"></pre>
    <script>
    const auth = () => ({ Authorization: 'Bearer ' + token.value });
    function cell(value) { const td = document.createElement('td'); td.textContent = typeof value === 'object' && value !== null ? JSON.stringify(value) : value; return td; }
    async function load(view, query) {
      const response = await fetch('/v1/views/' + view + (query || ''), { headers: auth() });
      const target = document.getElementById(view); target.textContent = '';
      if (!response.ok) { target.textContent = (await response.json()).error; return; }
      const rows = await response.json(); if (!rows.length) { target.textContent = 'none'; return; }
      const table = document.createElement('table'); const head = table.insertRow();
      Object.keys(rows[0]).forEach(k => { const th = document.createElement('th'); th.textContent = k; head.appendChild(th); });
      rows.forEach(r => { const tr = table.insertRow(); Object.values(r).forEach(v => tr.appendChild(cell(v))); });
      target.appendChild(table);
    }
    function loadAll() { load('activities', '?order=updated_at.desc&limit=50'); load('queue_depth'); load('recent_deliveries', '?order=id.desc&limit=50'); }
    async function sendMessage() {
      const response = await fetch('/rest/v1/device_live_activity_message', { method: 'POST',
        headers: Object.assign({ 'Content-Type': 'application/json', Prefer: 'resolution=merge-duplicates' }, auth()),
        body: JSON.stringify({ device_uuid: device.value, message: message.value, updated_by: 'dashboard' }) });
      if (!response.ok) alert((await response.json()).error); else loadAll();
    }
    // `liverelay dev` prints a link with the admin token in the fragment (#token=…), which the browser never sends:
    // take it into the field (kept for this tab only), drop it from the address bar, and load.
    const fromLink = new URLSearchParams(location.hash.slice(1)).get('token');
    if (fromLink) {
      sessionStorage.setItem('liverelay-admin-token', fromLink);
      history.replaceState(null, '', location.pathname + location.search);
    }
    token.value = sessionStorage.getItem('liverelay-admin-token') || '';
    token.addEventListener('change', () => sessionStorage.setItem('liverelay-admin-token', token.value));
    if (token.value) loadAll();
    function listen() {
      const source = new EventSource('/v1/stream?channel=' + encodeURIComponent(channel.value) + '&access_token=' + encodeURIComponent(token.value));
      ['activity-update', 'activity-end', 'live-activity-message'].forEach(name => source.addEventListener(name, e => {
        events.textContent = e.lastEventId + ' ' + name + ' ' + e.data + '\\n' + events.textContent; loadAll();
      }));
    }
    </script>
    </body></html>
    """
}
