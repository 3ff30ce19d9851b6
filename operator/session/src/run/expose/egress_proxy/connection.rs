//! One browser connection to the proxy: read the head, decide, answer,
//! relay, log.

use std::time::{Instant, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::dial::{dial, Refusal};
use super::head::{self, BadRequest, Kind, MAX_HEAD_BYTES};
use super::log::{rfc3339, EgressLog};
use super::record::Record;
use super::{Limits, Live};
use crate::run::expose::relay::pump::{self, Buffers};

/// 16 KiB a direction (a TLS record) while a connection idles, doubling up
/// to 256 KiB while reads fill it. The relays' 1 MiB moves a loopback
/// download faster still (docs/egress-hosts.md, Benchmark), but only at
/// speeds no origin across the network reaches, and then
/// [`Limits::max_connections`] bulk connections could hold 512 MiB, not 128.
const BUFFERS: Buffers = Buffers { first: 16 << 10, largest: 256 << 10 };

/// Reads up to the end of the head; returns it and what came after it.
async fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), BadRequest> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await.map_err(|_| BadRequest::RequestLine)?;
        if n == 0 {
            return Err(BadRequest::RequestLine);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = head::head_end(&buf) {
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(BadRequest::TooLong);
        }
    }
}

/// A short plain-text answer that closes the connection.
async fn answer(client: &mut TcpStream, status: &str, text: &str) {
    let body = format!("{text}\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(response.as_bytes()).await;
    let _ = client.shutdown().await;
}

/// Serves one connection from the browser.
pub(crate) async fn handle(mut client: TcpStream, live: &Live, log: &EgressLog, limits: &Limits) {
    let started = Instant::now();
    let read = tokio::time::timeout(limits.head_timeout, read_head(&mut client)).await;
    let parsed = match read {
        Ok(Ok((head, rest))) => head::parse(&head).map(|request| (request, rest)),
        Ok(Err(bad)) => Err(bad),
        Err(_) => return,
    };
    let (request, rest) = match parsed {
        Ok(parsed) => parsed,
        Err(bad) => {
            tracing::debug!("egress proxy: bad request: {bad}");
            answer(&mut client, "400 Bad Request", &format!("playpen egress: {bad}")).await;
            return;
        }
    };
    let record = |verdict, rule: String, address: Option<String>, sent, received| Record {
        at: rfc3339(SystemTime::now()),
        host: request.host.clone(),
        port: request.port,
        address,
        verdict,
        rule,
        sent,
        received,
        ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    let mut dialed = match dial(&request.host, request.port, &live.policy, limits.connect_timeout).await {
        Ok(dialed) => dialed,
        Err(Refusal { outcome, rule, address }) => {
            let status = if outcome == "refused" { "403 Forbidden" } else { "502 Bad Gateway" };
            let text = format!("playpen egress: {}:{} {outcome} ({rule})", request.host, request.port);
            answer(&mut client, status, &text).await;
            if live.logged {
                log.write(&record(outcome, rule, address.map(|a| a.to_string()), 0, 0));
            }
            return;
        }
    };
    // Each write passed on as it comes: with Nagle's algorithm a small one
    // after another (a body after its head, a TLS record after the last)
    // waited for the peer's ACK, which a browser waiting for the rest delays
    // by 40 ms (docs/egress-hosts.md, Benchmark). The browser's side, on
    // loopback, also gets Reno, as the viewer relay's sockets do
    // (`pump::tune` says why); the origin's side keeps the node's.
    pump::tune(&client);
    let _ = dialed.stream.set_nodelay(true);
    let mut sent = rest.len() as u64;
    let opened = match &request.kind {
        Kind::Connect => client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await,
        Kind::Forward(head) => {
            sent += head.len() as u64;
            dialed.stream.write_all(head).await
        }
    };
    let relayed = match opened {
        Ok(()) if rest.is_empty() => Ok(()),
        Ok(()) => dialed.stream.write_all(&rest).await,
        Err(err) => Err(err),
    };
    let mut received = 0;
    if relayed.is_ok() {
        // A reset ends the relay without its counts: the record then shows what the head carried.
        if let Ok((up, down)) = pump::relay_with(&mut client, &mut dialed.stream, BUFFERS).await {
            sent += up;
            received = down;
        }
    }
    if live.logged {
        let address = Some(dialed.address.ip().to_string());
        log.write(&record("allowed", dialed.verdict.rule.clone(), address, sent, received));
    }
}
