//! Upload throughput of the recording exporter's uploader (issue 33), run
//! by `tests/bench/export.sh` (which starts a SeaweedFS of its own on
//! loopback with SigV4 enforced and says where in `PLAYPEN_TEST_OBJECTSTORE`);
//! what it measured: docs/recordings-export.md (Benchmark).
//!
//! Two sets of files of incompressible bytes, written once and read from
//! the page cache by every client:
//!
//! * segments: WebM-sized files of 1 to 20 MiB (a 10 s to 60 s segment at
//!   the usual screencast bitrates; above 8 MiB the uploader goes multipart);
//! * large: a few files of 128 MiB (multipart, 16 parts each).
//!
//! Clients, interleaved in the same rounds (their order alternates):
//!
//! * `uploader`: [`Uploader::upload_file`] with the exporter's own
//!   [`UploadOptions::default`], file after file as an exporter pass sends
//!   them (one `PUT` up to 8 MiB, 8 MiB parts two at a time beyond; SHA-256
//!   of the bytes for the manifest, SigV4 with the payload signed, the
//!   ledger synced after each file);
//! * `curl` (the baseline): one `curl -T` per file, streamed from the file
//!   in one `PUT` whatever its size, signed by curl's own SigV4 with an
//!   `UNSIGNED-PAYLOAD` (no hashing, no parts, no ledger): the store's
//!   ingest rate as the simplest correct client reaches it on this machine.
//!
//! Printed: median MiB/s per set and client, uploader / curl, and the CPU
//! each client and the store spent per GiB (from `/proc/<pid>/stat`).
//!
//! `PLAYPEN_BENCH_EXPORT_ROUNDS` (3), `PLAYPEN_BENCH_EXPORT_LARGE` (2) files
//! of `PLAYPEN_BENCH_EXPORT_LARGE_MIB` (128); `PLAYPEN_BENCH_STORE_PID` (the
//! store's pid, for its CPU), `PLAYPEN_BENCH_CLK_TCK` (100).

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};
use playpen_api::layout::{EXPORT_ACCESS_KEY_ID_KEY, EXPORT_SECRET_ACCESS_KEY_KEY};
use playpen_session::export::{CredentialsSource, Destination, SessionId, UploadOptions, Uploader};

const MIB: u64 = 1 << 20;
/// The segments set: sizes in MiB, twice over.
const SEGMENT_MIB: [u64; 9] = [1, 2, 4, 6, 8, 10, 12, 16, 20];

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("{name}={v}: not a number")))
}

/// The store from the env file `tests/objectstore/start.sh` wrote.
struct Store {
    endpoint: String,
    bucket: String,
    region: String,
    key: String,
    secret: String,
}

fn store() -> Store {
    let file =
        std::env::var("PLAYPEN_TEST_OBJECTSTORE").expect("PLAYPEN_TEST_OBJECTSTORE (tests/bench/export.sh sets it)");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let vars: HashMap<&str, &str> =
        text.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split_once('=')).collect();
    let var = |name: &str| vars.get(name).unwrap_or_else(|| panic!("{file} has no {name}")).to_string();
    Store {
        endpoint: var("PLAYPEN_TEST_S3_ENDPOINT"),
        bucket: var("PLAYPEN_TEST_S3_BUCKET"),
        region: var("PLAYPEN_TEST_S3_REGION"),
        key: var("PLAYPEN_TEST_S3_ACCESS_KEY_ID"),
        secret: var("PLAYPEN_TEST_S3_SECRET_ACCESS_KEY"),
    }
}

/// CPU seconds from `/proc/<pid>/stat`: (own utime + stime, waited-for children's).
fn cpu_of(pid: &str, tick: f64) -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return (0.0, 0.0) };
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    // Fields 14-17 of proc(5), counted from the state (field 3).
    let f: Vec<f64> = after.split_whitespace().skip(11).take(4).map(|v| v.parse().unwrap()).collect();
    ((f[0] + f[1]) / tick, (f[2] + f[3]) / tick)
}

/// Deterministic bytes that neither compress nor repeat (xorshift), as WebM's.
fn write_noise(path: &Path, len: u64, seed: u64) {
    let mut x = seed | 1;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut block = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        for chunk in block.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes());
        }
        let n = left.min(block.len() as u64) as usize;
        out.write_all(&block[..n]).unwrap();
        left -= n as u64;
    }
    out.flush().unwrap();
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Client {
    Uploader,
    Curl,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Self::Uploader => "uploader",
            Self::Curl => "curl",
        }
    }
}

/// One client's upload of one set: wall time, its CPU, the store's CPU.
#[derive(Default, Clone, Copy)]
struct Sample {
    wall: Duration,
    client_cpu: f64,
    store_cpu: f64,
}

struct Bench {
    store: Store,
    work: PathBuf,
    run: String,
    store_pid: Option<String>,
    tick: f64,
    reader: Arc<dyn ObjectStore>,
}

impl Bench {
    fn credentials(&self) -> PathBuf {
        let dir = self.work.join("secret");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(EXPORT_ACCESS_KEY_ID_KEY), &self.store.key).unwrap();
        std::fs::write(dir.join(EXPORT_SECRET_ACCESS_KEY_KEY), &self.store.secret).unwrap();
        dir
    }

    fn store_cpu(&self) -> f64 {
        self.store_pid.as_deref().map_or(0.0, |pid| cpu_of(pid, self.tick).0)
    }

    /// The keys' prefix of one client's round: `bench/<run>/<client>-<round>-<set>`.
    fn name(client: Client, round: u64, set: &str) -> String {
        format!("{}-{round}-{set}", client.name())
    }

    async fn upload(&self, client: Client, round: u64, set: &str, files: &[PathBuf]) -> Sample {
        let name = Self::name(client, round, set);
        let (store_before, (me_before, children_before)) = (self.store_cpu(), cpu_of("self", self.tick));
        let started = Instant::now();
        let last_key = match client {
            Client::Uploader => self.with_uploader(&name, files).await,
            Client::Curl => self.with_curl(&name, files),
        };
        let wall = started.elapsed();
        let (me_after, children_after) = cpu_of("self", self.tick);
        let client_cpu = match client {
            Client::Uploader => me_after - me_before,
            Client::Curl => children_after - children_before,
        };
        let sample = Sample { wall, client_cpu, store_cpu: self.store_cpu() - store_before };
        // The last object is whole in the store (a check, not timed).
        let meta = self.reader.head(&StorePath::from(last_key.as_str())).await.unwrap();
        assert_eq!(meta.size, std::fs::metadata(files.last().unwrap()).unwrap().len(), "{last_key}");
        sample
    }

    async fn with_uploader(&self, name: &str, files: &[PathBuf]) -> String {
        let destination = Destination {
            endpoint: self.store.endpoint.clone(),
            bucket: self.store.bucket.clone(),
            prefix: "bench/{uid}/{name}".into(),
            region: self.store.region.clone(),
            path_style: true,
            credentials: CredentialsSource::Files { dir: self.credentials() },
        }
        .validate()
        .unwrap();
        let session = SessionId { namespace: "bench".into(), name: name.into(), uid: self.run.clone() };
        let ledger = self.work.join(format!("{name}.ledger.jsonl"));
        let uploader = Uploader::new(&destination, &session, Utc::now(), &ledger, UploadOptions::default()).unwrap();
        let mut last = String::new();
        for (i, file) in files.iter().enumerate() {
            let key = uploader.layout().video(u32::try_from(i + 1).unwrap()).unwrap();
            uploader.upload_file(file, &key).await.unwrap();
            last = key.as_str().to_owned();
        }
        last
    }

    fn with_curl(&self, name: &str, files: &[PathBuf]) -> String {
        let mut last = String::new();
        for (i, file) in files.iter().enumerate() {
            let key = format!("bench/{}/{name}/video/{:06}.webm", self.run, i + 1);
            let mut curl = Command::new("curl")
                .args(["--noproxy", "*", "-sS", "--fail-with-body", "-o", "/dev/null", "-K", "-"])
                .args(["--aws-sigv4", &format!("aws:amz:{}:s3", self.store.region)])
                .args(["-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"])
                .arg("-T")
                .arg(file)
                .arg(format!("{}/{}/{key}", self.store.endpoint, self.store.bucket))
                .stdin(Stdio::piped())
                .spawn()
                .expect("curl");
            // The key pair on stdin, never on the command line.
            let mut stdin = curl.stdin.take().unwrap();
            writeln!(stdin, "user = \"{}:{}\"", self.store.key, self.store.secret).unwrap();
            drop(stdin);
            assert!(curl.wait().unwrap().success(), "curl PUT of {} failed", file.display());
            last = key;
        }
        last
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rounds = setting("PLAYPEN_BENCH_EXPORT_ROUNDS", 3);
    let large = setting("PLAYPEN_BENCH_EXPORT_LARGE", 2);
    let large_mib = setting("PLAYPEN_BENCH_EXPORT_LARGE_MIB", 128);
    let tick = setting("PLAYPEN_BENCH_CLK_TCK", 100) as f64;
    let work = std::env::temp_dir().join("export-bench");
    std::fs::create_dir_all(&work).unwrap();
    let store = store();
    let reader: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(&store.endpoint)
            .with_bucket_name(&store.bucket)
            .with_region(&store.region)
            .with_access_key_id(&store.key)
            .with_secret_access_key(&store.secret)
            .with_allow_http(true)
            .build()
            .unwrap(),
    );
    let run = format!("{:x}", Utc::now().timestamp_millis());
    let bench = Bench {
        store,
        work: work.clone(),
        run,
        store_pid: std::env::var("PLAYPEN_BENCH_STORE_PID").ok(),
        tick,
        reader,
    };

    let mut sets: Vec<(&str, Vec<PathBuf>)> = vec![("segments", vec![]), ("large", vec![])];
    for (i, mib) in SEGMENT_MIB.iter().chain(SEGMENT_MIB.iter()).enumerate() {
        let path = work.join(format!("segment-{i:02}.webm"));
        write_noise(&path, mib * MIB, i as u64 + 1);
        sets[0].1.push(path);
    }
    for i in 0..large {
        let path = work.join(format!("large-{i}.webm"));
        write_noise(&path, large_mib * MIB, 1000 + i);
        sets[1].1.push(path);
    }
    let bytes = |files: &[PathBuf]| files.iter().map(|f| std::fs::metadata(f).unwrap().len()).sum::<u64>();
    eprintln!(
        "export: {} segment files ({} MiB), {large} large ({} MiB), {rounds} rounds, clients interleaved",
        sets[0].1.len(),
        bytes(&sets[0].1) / MIB,
        bytes(&sets[1].1) / MIB
    );

    // Warm-up (not counted): both clients once on a small file; the store grows its volumes.
    let warm = vec![sets[0].1[0].clone()];
    bench.upload(Client::Uploader, 0, "warm", &warm).await;
    bench.upload(Client::Curl, 0, "warm", &warm).await;

    let mut samples: HashMap<(&str, &str), Vec<Sample>> = HashMap::new();
    for round in 1..=rounds {
        let order = if round % 2 == 1 { [Client::Uploader, Client::Curl] } else { [Client::Curl, Client::Uploader] };
        for (set, files) in &sets {
            for client in order {
                let s = bench.upload(client, round, set, files).await;
                let mibs = bytes(files) as f64 / MIB as f64 / s.wall.as_secs_f64();
                eprintln!(
                    "round {round} {set:<8} {:<8} {:>7.1} MiB/s  client CPU {:>5.2} s  store CPU {:>5.2} s",
                    client.name(),
                    mibs,
                    s.client_cpu,
                    s.store_cpu
                );
                samples.entry((set, client.name())).or_default().push(s);
            }
        }
    }

    println!();
    println!("| set | client | MiB per round | median MiB/s | vs curl | client CPU s/GiB | store CPU s/GiB |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (set, files) in &sets {
        let mib = bytes(files) as f64 / MIB as f64;
        let rate = |client: Client| {
            median(samples[&(*set, client.name())].iter().map(|s| mib / s.wall.as_secs_f64()).collect())
        };
        let baseline = rate(Client::Curl);
        for client in [Client::Curl, Client::Uploader] {
            let all = &samples[&(*set, client.name())];
            let gib = mib * all.len() as f64 / 1024.0;
            let per_gib = |f: fn(&Sample) -> f64| all.iter().map(f).sum::<f64>() / gib;
            println!(
                "| {set} ({} files) | {} | {mib:.0} | {:.1} | {:.2} | {:.2} | {:.2} |",
                files.len(),
                client.name(),
                rate(client),
                rate(client) / baseline,
                per_gib(|s| s.client_cpu),
                per_gib(|s| s.store_cpu)
            );
        }
    }
}
