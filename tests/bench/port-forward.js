// Server and client of tests/bench/port-forward.sh (plain Node, no packages).
//   node port-forward.js serve PORT [HOST]                  prints "listening HOST:PORT" once bound
//   node port-forward.js client HOST PORT MIB ROUNDS LABEL  rounds of MIB MiB down then up;
//                                                           per-round lines to stderr, then
//                                                           "LABEL<TAB>dir<TAB>median<TAB>min<TAB>max" (MiB/s)
// Protocol, one transfer per connection: the client sends "D <bytes>\n" and the
// server streams that many bytes, or "U <bytes>\n" and then the bytes, and the
// server answers "<bytes received>\n" once it has them all (no half-close needed).
'use strict';
const net = require('net');

const MiB = 1 << 20;
const CHUNK = Buffer.alloc(MiB, 0x5a);
const TIMEOUT_MS = 120000;

function pump(sock, total, done) {
  let left = total;
  const more = () => {
    while (left > 0) {
      const n = Math.min(left, CHUNK.length);
      left -= n;
      if (!sock.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) {
        sock.once('drain', more);
        return;
      }
    }
    done();
  };
  more();
}

function serve(port, host) {
  const server = net.createServer((sock) => {
    let head = Buffer.alloc(0);
    let mode = null;
    let want = 0;
    let got = 0;
    sock.on('error', () => {});
    sock.on('data', (buf) => {
      if (mode === null) {
        head = Buffer.concat([head, buf]);
        const nl = head.indexOf(10);
        if (nl < 0) {
          if (head.length > 64) sock.destroy();
          return;
        }
        const [cmd, n] = head.subarray(0, nl).toString().trim().split(' ');
        want = Number(n);
        buf = head.subarray(nl + 1);
        if (cmd === 'D' && want >= 0) {
          mode = 'D';
          pump(sock, want, () => sock.end());
          return;
        }
        if (cmd !== 'U' || !(want >= 0)) {
          sock.destroy();
          return;
        }
        mode = 'U';
      }
      if (mode === 'U') {
        got += buf.length;
        if (got >= want) {
          mode = 'answered';
          sock.end(`${got}\n`);
        }
      }
    });
    sock.on('end', () => {
      if (mode === 'U') sock.end(`${got}\n`); // short upload: say how much arrived
    });
  });
  server.listen(Number(port), host, () => {
    const a = server.address();
    console.log(`listening ${a.address}:${a.port}`);
  });
}

// One transfer; resolves to seconds from connect() to the last byte (down) or
// to the server's answer that it has every byte (up).
function transfer(host, port, dir, bytes) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const secs = () => Number(process.hrtime.bigint() - t0) / 1e9;
    const sock = net.connect(Number(port), host);
    let got = 0;
    let answer = '';
    let finished = false;
    const fail = (msg) => {
      if (finished) return;
      finished = true;
      sock.destroy();
      reject(new Error(`${dir === 'D' ? 'download' : 'upload'} of ${bytes} bytes: ${msg}`));
    };
    const ok = () => {
      if (finished) return;
      finished = true;
      const s = secs();
      sock.destroy();
      resolve(s);
    };
    sock.setTimeout(TIMEOUT_MS, () => fail(`no progress for ${TIMEOUT_MS / 1000} s (${got} bytes in)`));
    sock.on('error', (e) => fail(e.message));
    sock.on('connect', () => {
      sock.setNoDelay(true);
      sock.write(`${dir} ${bytes}\n`);
      if (dir === 'U') pump(sock, bytes, () => {});
    });
    sock.on('data', (buf) => {
      if (dir === 'D') {
        got += buf.length;
        if (got >= bytes) ok();
      } else {
        answer += buf.toString();
        if (answer.includes('\n')) {
          const n = Number(answer.trim());
          if (n === bytes) ok();
          else fail(`server received ${answer.trim()} bytes`);
        }
      }
    });
    sock.on('close', () => fail(`connection closed early (${dir === 'D' ? got : answer.trim() || 0} bytes)`));
  });
}

async function client(host, port, mib, rounds, label) {
  const bytes = Number(mib) * MiB;
  // Warm-up, not counted: the first port-forward stream pays for the tunnel set-up.
  await transfer(host, port, 'D', 16 * MiB);
  await transfer(host, port, 'U', 16 * MiB);
  const rates = { download: [], upload: [] };
  for (let i = 1; i <= Number(rounds); i++) {
    for (const [dir, name] of [['D', 'download'], ['U', 'upload']]) {
      const s = await transfer(host, port, dir, bytes);
      const r = bytes / MiB / s;
      rates[name].push(r);
      process.stderr.write(`  ${label} ${name} round ${i}: ${mib} MiB in ${s.toFixed(3)} s = ${r.toFixed(1)} MiB/s\n`);
    }
  }
  for (const [name, v] of Object.entries(rates)) {
    v.sort((a, b) => a - b);
    const median = v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    console.log([label, name, median, v[0], v[v.length - 1]].map((x) => (typeof x === 'number' ? x.toFixed(1) : x)).join('\t'));
  }
}

const [role, ...args] = process.argv.slice(2);
if (role === 'serve') {
  serve(args[0], args[1] || '127.0.0.1');
} else if (role === 'client') {
  client(...args).catch((e) => {
    console.error(`port-forward.js: ${e.message}`);
    process.exit(1);
  });
} else {
  console.error('usage: port-forward.js serve PORT [HOST] | client HOST PORT MIB ROUNDS LABEL');
  process.exit(2);
}
