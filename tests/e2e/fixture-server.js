// The fixture page of the end-to-end tests, served inside the cluster by the
// browser image's own Node: a button whose click the server records (in its
// log and at /clicks), so a click through a snapshot ref is proven server-side.
// Every request is logged too: a fixture a session must not reach shows none.
'use strict';
const http = require('http');
let clicks = 0;
const page = `<!doctype html><html><head><title>Playpen fixture</title></head><body>
<h1 id="heading">Fixture</h1>
<button onclick="fetch('/click', {method: 'POST'}).then(() => { document.getElementById('heading').textContent = 'Clicked'; })">Record a click</button>
</body></html>`;
http.createServer((req, res) => {
  console.log(`${req.method} ${req.url} from ${req.socket.remoteAddress}`);
  if (req.method === 'GET' && req.url === '/') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(page);
  } else if (req.method === 'POST' && req.url === '/click') {
    clicks += 1;
    console.log(`click ${clicks}`);
    res.end('ok');
  } else if (req.url === '/clicks') {
    res.end(String(clicks));
  } else {
    res.writeHead(404);
    res.end();
  }
}).listen(8080, () => console.log('fixture listening on 8080'));
