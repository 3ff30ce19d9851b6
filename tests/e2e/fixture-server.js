// The fixture page of the end-to-end tests, served inside the cluster by the
// browser image's own Node: a button whose click the server records (in its
// log and at /clicks), so a click through a snapshot ref is proven server-side.
// Every request is logged too: a fixture a session must not reach shows none.
// `/colour` is one solid colour under an invisible full-page button that
// turns it another colour: what a viewer's screencast shows can be read from
// one pixel, and a click through the viewer changes it.
// `/redirect?to=URL` answers 302 to URL (a redirect from an allowed host to
// a refused one); a WebSocket upgrade on any path is accepted and logged
// (`UPGRADE /path`); every UDP datagram to port 8080 is logged (`UDP n
// bytes from ...`), so a page's WebRTC/STUN attempt that left the browser
// shows in the log.
'use strict';
const crypto = require('crypto');
const dgram = require('dgram');
const http = require('http');
let clicks = 0;
const page = `<!doctype html><html><head><title>Playpen fixture</title></head><body>
<h1 id="heading">Fixture</h1>
<button onclick="fetch('/click', {method: 'POST'}).then(() => { document.getElementById('heading').textContent = 'Clicked'; })">Record a click</button>
</body></html>`;
const colourPage = `<!doctype html><html><head><title>Colour fixture</title><style>
html, body { margin: 0; height: 100%; background: rgb(255, 0, 170); }
button { position: fixed; inset: 0; width: 100%; height: 100%; opacity: 0; }
</style></head><body>
<button onclick="document.body.style.background = 'rgb(0, 170, 255)'; document.body.dataset.clicked = 'yes';">Change colour</button>
</body></html>`;
// `/form`: a field and a counter in the page's JavaScript memory (what a
// suspend on the State path keeps, and what it loses).
const formPage = `<!doctype html><html><head><title>Form fixture</title></head><body>
<label>Note <input id="note" name="note"></label>
<script>window.counter = 0; setInterval(() => { window.counter += 1; }, 1000);</script>
</body></html>`;
http.createServer((req, res) => {
  console.log(`${req.method} ${req.url} from ${req.socket.remoteAddress}`);
  if (req.method === 'GET' && req.url === '/') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  } else if (req.method === 'GET' && req.url === '/form') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(formPage);
  } else if (req.method === 'GET' && req.url === '/colour') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(colourPage);
  } else if (req.method === 'POST' && req.url === '/click') {
    clicks += 1;
    console.log(`click ${clicks}`);
    res.end('ok');
  } else if (req.method === 'GET' && req.url.startsWith('/redirect?to=')) {
    res.writeHead(302, { location: decodeURIComponent(req.url.slice('/redirect?to='.length)) });
    res.end();
  } else if (req.url === '/clicks') {
    res.end(String(clicks));
  } else {
    res.writeHead(404);
    res.end();
  }
}).on('upgrade', (req, socket) => {
  console.log(`UPGRADE ${req.url} from ${req.socket.remoteAddress}`);
  const accept = crypto.createHash('sha1')
    .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
    `Sec-WebSocket-Accept: ${accept}\r\n\r\n`);
  socket.on('error', () => {});
  socket.on('data', () => {});
}).listen(8080, () => console.log('fixture listening on 8080'));
dgram.createSocket('udp4')
  .on('message', (msg, from) => console.log(`UDP ${msg.length} bytes from ${from.address}:${from.port}`))
  .bind(8080);
