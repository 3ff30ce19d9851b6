// cdp.js: runs INSIDE the sandbox (Node 22+, global WebSocket and fetch), talks
// to the session runtime's CDP endpoint on 127.0.0.1:<port> (runtime.json cdpPort).
//   node cdp.js read [port]          -> one JSON line: every page's url, counter, input, clock
//   node cdp.js fill <text> [port]   -> focus #f on every page and type <text>-<i> (Input.insertText)
//   node cdp.js hold <file> [port]   -> keep one page WebSocket open, append a line per second
//                                       (Runtime.evaluate of the counter) or on close/error to <file>
const out = s => require("fs").writeSync(1, s + "\n");
const [cmd, arg, portArg] = process.argv.slice(2);
const port = Number((cmd === 'read' ? arg : portArg) || 9222);
const base = `http://127.0.0.1:${port}`;
async function pages() {
  const r = await fetch(`${base}/json/list`);
  const list = await r.json();
  return list.filter(t => t.type === 'page')
    .map(t => ({ ...t, ws: t.webSocketDebuggerUrl.replace(/:\d+\//, `:${port}/`) }));
}
function session(wsUrl) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl);
    let id = 0; const waiting = new Map();
    ws.onmessage = e => { const m = JSON.parse(e.data); if (waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); } };
    ws.onerror = e => reject(new Error('ws error ' + (e.message || '')));
    ws.onopen = () => resolve({
      ws,
      send: (method, params = {}) => new Promise(res => { id++; waiting.set(id, res); ws.send(JSON.stringify({ id, method, params })); }),
    });
  });
}
const probe = `JSON.stringify({counter: Number(document.getElementById('c')?.textContent), input: document.getElementById('f')?.value, perfNow: Math.round(performance.now()), dateNow: Date.now(), scrollY: scrollY})`;
async function main() {
  if (cmd === 'read') {
    const res = [];
    for (const p of await pages()) {
      const s = await session(p.ws);
      const r = await s.send('Runtime.evaluate', { expression: probe, returnByValue: true });
      res.push({ url: p.url.slice(0, 40), ...JSON.parse(r.result.result.value || '{}') });
      s.ws.close();
    }
    out(JSON.stringify(res));
  } else if (cmd === 'fill') {
    let i = 0;
    for (const p of await pages()) {
      const s = await session(p.ws);
      await s.send('Runtime.evaluate', { expression: `document.getElementById('f').focus()` });
      await s.send('Input.insertText', { text: `${arg}-${i++}` });
      await s.send('Runtime.evaluate', { expression: `scrollTo(0, 300)` });
      s.ws.close();
    }
    out(`filled ${i}`);
  } else if (cmd === 'hold') {
    const fs = require('fs');
    const log = l => fs.appendFileSync(arg, `${new Date().toISOString()} ${l}\n`);
    const [p] = await pages();
    const s = await session(p.ws);
    s.ws.onclose = e => { log(`closed code=${e.code}`); process.exit(0); };
    s.ws.onerror = e => log(`error ${e.message || ''}`);
    log('open');
    setInterval(async () => {
      const r = await s.send('Runtime.evaluate', { expression: probe, returnByValue: true });
      log(`alive ${r.result.result.value}`);
    }, 1000);
  } else {
    console.error('usage: node cdp.js read|fill|hold ...'); process.exit(2);
  }
}
main().catch(e => { console.error(String(e)); process.exit(1); });
