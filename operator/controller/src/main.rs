//! `playpen-operator`: `run` (the controller, the default) or `crd`.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use playpen_operator::children::{
    parse_browser_resources, Cidr, DnsPeer, EgressDefaults, PodPeer, SeccompChoice, Settings,
};
use playpen_operator::operator::{self, Config};
use playpen_operator::recovery::RecoveryBudget;
use playpen_operator::runtime::leader::LeaseConfig;

#[derive(Debug, Parser)]
#[command(name = "playpen-operator", version, about = "Reconciles BrowserSession resources")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controller (the default).
    Run(Box<RunArgs>),
    /// Print a CustomResourceDefinition as YAML (BrowserSession by default).
    Crd {
        /// Which: browsersession, browserpool or browsersnapshot.
        #[arg(long, default_value = "browsersession", value_parser = ["browsersession", "browserpool", "browsersnapshot"])]
        kind: String,
    },
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Namespaces to watch, comma-separated; empty watches all.
    #[arg(long, env = "PLAYPEN_NAMESPACES", value_delimiter = ',', default_value = "")]
    namespaces: Vec<String>,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, env = "PLAYPEN_HTTP_ADDR", default_value = "0.0.0.0:8080")]
    http_addr: SocketAddr,
    /// Seccomp profile for Enforced-sandbox Pods: localhost/<path>, unconfined or runtime-default.
    #[arg(long, env = "PLAYPEN_ENFORCED_SECCOMP", default_value = "localhost/playpen/chromium.json")]
    enforced_seccomp: String,
    /// UID/GID of the browser image's user.
    #[arg(long, env = "PLAYPEN_RUN_AS_USER", default_value_t = 1000)]
    run_as_user: i64,
    /// The cluster's Pod and Service CIDRs, comma-separated: no session reaches them by default.
    #[arg(long, env = "PLAYPEN_CLUSTER_CIDRS", value_delimiter = ',', default_value = "")]
    cluster_cidrs: Vec<String>,
    /// More CIDRs no session reaches by default, comma-separated.
    #[arg(long, env = "PLAYPEN_DENY_CIDRS", value_delimiter = ',', default_value = "")]
    deny_cidrs: Vec<String>,
    /// Host rules (`*.example.com`, `sso.corp.test:443`) every session narrowed by host rules may reach, comma-separated.
    #[arg(long, env = "PLAYPEN_ALLOW_HOSTS", value_delimiter = ',', default_value = "")]
    allow_hosts: Vec<String>,
    /// Host rules no session reaches, comma-separated; a deny wins over an allow.
    #[arg(long, env = "PLAYPEN_DENY_HOSTS", value_delimiter = ',', default_value = "")]
    deny_hosts: Vec<String>,
    /// Namespace of the cluster's DNS resolver Pods.
    #[arg(long, env = "PLAYPEN_DNS_NAMESPACE", default_value = "kube-system")]
    dns_namespace: String,
    /// Labels of the cluster's DNS resolver Pods, as key=value pairs, comma-separated.
    #[arg(long, env = "PLAYPEN_DNS_POD_LABELS", value_delimiter = ',', default_value = "k8s-app=kube-dns")]
    dns_pod_labels: Vec<String>,
    /// Resolvers outside the Pod network (node-local caches), as CIDRs, comma-separated.
    #[arg(long, env = "PLAYPEN_DNS_CIDRS", value_delimiter = ',', default_value = "")]
    dns_cidrs: Vec<String>,
    /// Labels of the operator's own Pods, as key=value pairs, comma-separated:
    /// sessions with host rules admit these Pods (in the operator's
    /// namespace) to their runtime's readiness port, where the operator
    /// reads the egress report. Empty (out of the cluster): no ingress, no report.
    #[arg(long, env = "PLAYPEN_OPERATOR_POD_LABELS", value_delimiter = ',', default_value = "")]
    operator_pod_labels: Vec<String>,
    /// Elect a leader through a Lease (needed with more than one replica).
    #[arg(long, env = "PLAYPEN_LEADER_ELECTION", default_value_t = false)]
    leader_election: bool,
    /// Namespace of the Lease (the operator's own).
    #[arg(long, env = "POD_NAMESPACE", default_value = "playpen-system")]
    lease_namespace: String,
    /// Lease name.
    #[arg(long, env = "PLAYPEN_LEASE_NAME", default_value = "playpen-operator")]
    lease_name: String,
    /// This replica's identity in the Lease.
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// How long a leader's claim lasts without renewal (seconds).
    #[arg(long, env = "PLAYPEN_LEASE_DURATION_SECONDS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(2..=3600))]
    lease_duration_seconds: u64,
    /// How often the leader renews and a standby retries (seconds); also the
    /// bound of one renewal. Must be less than the lease duration.
    #[arg(long, env = "PLAYPEN_LEASE_RETRY_SECONDS", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=600))]
    lease_retry_seconds: u64,
    /// Failed or evicted browser Pods replaced per session before it is Failed for good.
    #[arg(long, env = "PLAYPEN_POD_REPLACEMENTS", default_value_t = 5, value_parser = clap::value_parser!(i32).range(0..=1000))]
    pod_replacements: i32,
    /// Restarts of a browser container that never becomes ready before its Pod is stopped.
    #[arg(long, env = "PLAYPEN_CONTAINER_RESTARTS", default_value_t = 10, value_parser = clap::value_parser!(i32).range(1..=10000))]
    container_restarts: i32,
    /// The browser container's resources where a session or pool template
    /// sets none, as JSON (`{"requests":{...},"limits":{...}}`; `{}` for none).
    #[arg(long, env = "PLAYPEN_BROWSER_RESOURCES", default_value = playpen_operator::children::DEFAULT_BROWSER_RESOURCES)]
    browser_resources: String,
    /// The RuntimeClass of browser Pods whose session or pool template names
    /// none (empty: the cluster's default runtime).
    #[arg(long, env = "PLAYPEN_RUNTIME_CLASS_NAME", default_value = "")]
    runtime_class_name: String,
    /// Seccomp of Enforced sessions by RuntimeClass, as name=choice pairs
    /// (choices as --enforced-seccomp), comma-separated.
    #[arg(long, env = "PLAYPEN_RUNTIME_CLASS_SECCOMP", value_delimiter = ',', default_value = "")]
    runtime_class_seccomp: Vec<String>,
    /// Where the recordings of sessions that name no destination go, as
    /// JSON (`spec.recording.export`'s form: `{"s3":{"endpoint":...}}`; empty:
    /// they stay on the session's volume). The credentials Secret it names
    /// must exist in each session's namespace.
    #[arg(long, env = "PLAYPEN_RECORDING_EXPORT", default_value = "")]
    recording_export: String,
    /// RuntimeClasses whose browser Pods a node agent can checkpoint (the
    /// live suspend path), comma-separated; empty: every suspend takes the
    /// State path.
    #[arg(long, env = "PLAYPEN_LIVE_SUSPEND_RUNTIME_CLASSES", value_delimiter = ',', default_value = "")]
    live_suspend_runtime_classes: Vec<String>,
    /// Human-readable logs instead of JSON.
    #[arg(long, env = "PLAYPEN_LOG_TEXT", default_value_t = false)]
    log_text: bool,
}

impl Default for RunArgs {
    fn default() -> Self {
        Self::parse_from(["run"])
    }
}

#[derive(Debug, Parser)]
struct RunOnly {
    #[command(flatten)]
    args: RunArgs,
}

impl RunArgs {
    fn parse_from<I: IntoIterator<Item = &'static str>>(argv: I) -> Self {
        RunOnly::parse_from(argv).args
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Crd { kind }) => {
            let yaml = match kind.as_str() {
                "browserpool" => playpen_operator::crd::pool_crd_yaml(),
                "browsersnapshot" => playpen_operator::crd::snapshot_crd_yaml(),
                _ => playpen_operator::crd::crd_yaml(),
            };
            print!("{}", yaml.context("generating the CRD")?);
            return Ok(());
        }
        Some(Command::Run(args)) => *args,
        None => RunArgs::default(),
    };
    playpen_operator::telemetry::init(!args.log_text);
    let enforced_seccomp =
        SeccompChoice::parse(&args.enforced_seccomp).map_err(anyhow::Error::msg).context("--enforced-seccomp")?;
    let seccomp_by_runtime_class = labels(&args.runtime_class_seccomp)
        .and_then(|pairs| {
            pairs
                .into_iter()
                .map(|(class, choice)| Ok((class, SeccompChoice::parse(&choice).map_err(anyhow::Error::msg)?)))
                .collect::<anyhow::Result<_>>()
        })
        .context("--runtime-class-seccomp (chart value sessions.seccompByRuntimeClass)")?;
    if args.lease_retry_seconds >= args.lease_duration_seconds {
        anyhow::bail!(
            "--lease-retry-seconds ({}) must be less than --lease-duration-seconds ({}): a leader renews several \
             times per term",
            args.lease_retry_seconds,
            args.lease_duration_seconds
        );
    }
    let egress = EgressDefaults {
        cluster_cidrs: cidrs(&args.cluster_cidrs).context("--cluster-cidrs (chart value network.clusterCIDRs)")?,
        deny_cidrs: cidrs(&args.deny_cidrs).context("--deny-cidrs (chart value network.denyCIDRs)")?,
        allow_hosts: host_rules("allowHosts", &args.allow_hosts)
            .context("--allow-hosts (chart value network.allowHosts)")?,
        deny_hosts: host_rules("denyHosts", &args.deny_hosts)
            .context("--deny-hosts (chart value network.denyHosts)")?,
        dns: DnsPeer {
            namespace: args.dns_namespace,
            pod_labels: labels(&args.dns_pod_labels).context("--dns-pod-labels (chart value network.dns.podLabels)")?,
            cidrs: cidrs(&args.dns_cidrs).context("--dns-cidrs (chart value network.dns.cidrs)")?,
        },
        report_reader: {
            let pod_labels = labels(&args.operator_pod_labels).context("--operator-pod-labels")?;
            (!pod_labels.is_empty()).then(|| PodPeer { namespace: args.lease_namespace.clone(), pod_labels })
        },
    };
    let recording_export =
        recording_export(&args.recording_export).context("--recording-export (chart value recordings.export)")?;
    let browser_resources = parse_browser_resources(&args.browser_resources)
        .map_err(anyhow::Error::msg)
        .context("--browser-resources (chart value sessions.resources)")?;
    let identity = match args.identity {
        Some(id) => id,
        None => format!("playpen-operator-{}", std::process::id()),
    };
    let config = Config {
        namespaces: args.namespaces.into_iter().filter(|n| !n.is_empty()).collect(),
        settings: Settings {
            enforced_seccomp,
            run_as_user: args.run_as_user,
            egress,
            browser_resources,
            runtime_class: Some(args.runtime_class_name).filter(|name| !name.is_empty()),
            seccomp_by_runtime_class,
            recording_export,
            live_runtime_classes: args.live_suspend_runtime_classes.into_iter().filter(|c| !c.is_empty()).collect(),
        },
        http_addr: args.http_addr,
        lease: args.leader_election.then(|| LeaseConfig {
            name: args.lease_name,
            namespace: args.lease_namespace,
            identity,
            lease_duration: Duration::from_secs(args.lease_duration_seconds),
            retry_period: Duration::from_secs(args.lease_retry_seconds),
        }),
        reporter: "playpen-operator".into(),
        recovery: RecoveryBudget {
            pod_replacements: args.pod_replacements,
            container_restarts: args.container_restarts,
            ..RecoveryBudget::default()
        },
    };
    let client = kube::Client::try_default().await.context("connecting to the Kubernetes API")?;
    let (handles, run) = operator::start(client, config).await.context("binding the HTTP endpoints")?;
    tracing::info!(http = %handles.http_addr, "playpen-operator started");
    tokio::select! {
        () = run => {}
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted"),
        () = terminate() => tracing::info!("terminated"),
    }
    Ok(())
}

fn cidrs(list: &[String]) -> anyhow::Result<Vec<Cidr>> {
    list.iter().filter(|c| !c.is_empty()).map(|c| c.parse::<Cidr>().map_err(anyhow::Error::from)).collect()
}

/// The non-empty entries of a host-rule list, checked as admission checks a session's.
fn host_rules(field: &'static str, list: &[String]) -> anyhow::Result<Vec<String>> {
    let list: Vec<String> = list.iter().filter(|h| !h.is_empty()).cloned().collect();
    playpen_api::egress_hosts::parse_list(field, &list)?;
    Ok(list)
}

/// The cluster's recordings destination (`None` when `json` is blank),
/// checked as admission checks a session's.
fn recording_export(json: &str) -> anyhow::Result<Option<playpen_api::v1alpha1::RecordingExport>> {
    if json.trim().is_empty() || json.trim() == "null" {
        return Ok(None);
    }
    let export: playpen_api::v1alpha1::RecordingExport = serde_json::from_str(json)
        .context(r#"not a destination like {"s3":{"endpoint":"https://s3.example.com","bucket":"b","credentialsSecret":{"name":"keys"}}}"#)?;
    export.check().map_err(anyhow::Error::msg)?;
    Ok(Some(export))
}

fn labels(list: &[String]) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    list.iter()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once('=').with_context(|| format!("{l:?} is not key=value"))?;
            Ok((k.to_owned(), v.to_owned()))
        })
        .collect()
}

async fn terminate() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_destination_is_checked_like_a_sessions() {
        assert!(recording_export("").unwrap().is_none());
        assert!(recording_export("null").unwrap().is_none());
        let good = r#"{"s3":{"endpoint":"http://store:8333","bucket":"rec","credentialsSecret":{"name":"keys"}}}"#;
        assert_eq!(recording_export(good).unwrap().map(|e| e.s3.bucket), Some("rec".to_owned()));
        let bad = good.replace("rec", "Rec");
        let said = format!("{:#}", recording_export(&bad).unwrap_err());
        assert!(said.contains("s3.bucket"), "{said}");
        let said = format!("{:#}", recording_export("{\"s3\":1}").unwrap_err());
        assert!(said.contains("not a destination like"), "{said}");
    }
}
