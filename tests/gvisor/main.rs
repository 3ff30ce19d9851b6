//! The product under gVisor on the real single node: the chart installed
//! with `sessions.runtimeClassName=gvisor` (one value puts every browser in
//! a gVisor sandbox), on a node whose containerd runs runsc for that
//! RuntimeClass (`PLAYPEN_NODE_GVISOR=1 tests/cluster/start-node.sh`). The
//! end-to-end scenarios again, one of each kind: create → Ready →
//! `playwright-cli goto` → the egress policy from the page (another
//! namespace's fixture and the API server out of reach through gVisor's own
//! network stack) → no ingress → the viewer through port-forward → the
//! sandbox (renderers in namespaces of their own, gVisor's kernel) → kill and
//! recover → delete; a real browser on the viewer; Playwright and Puppeteer
//! over CDP; a recording that outlives its session; a claim from a warm pool.
//!
//! Its own test binary: cargo runs test binaries one after another, so the
//! runc suite's Pods never compete for the node with these (the chart's
//! user ClusterRoles are cluster-wide names, too).

#[path = "../e2e/cdp.rs"]
#[allow(dead_code)]
mod cdp;
#[path = "../e2e/clients.rs"]
#[allow(dead_code)]
mod clients;
#[path = "../e2e/kubectl.rs"]
#[allow(dead_code)]
mod kubectl;
#[path = "../e2e/live.rs"]
mod live;
#[path = "../e2e/network.rs"]
#[allow(dead_code)]
mod network;
#[path = "../e2e/pool.rs"]
#[allow(dead_code)]
mod pool;
#[path = "../e2e/recording.rs"]
#[allow(dead_code)]
mod recording;
#[path = "../e2e/session.rs"]
#[allow(dead_code)]
mod session;
#[path = "../e2e/setup.rs"]
#[allow(dead_code)]
mod setup;
#[path = "../e2e/suspend.rs"]
#[allow(dead_code)]
mod suspend;
#[path = "../e2e/viewer.rs"]
#[allow(dead_code)]
mod viewer;

use anyhow::Context as _;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::api::Api;
use playpen_tests::client;

/// The RuntimeClass tests/cluster/start-node.sh creates for runsc.
const GVISOR: &str = "gvisor";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_gvisor_sessions_drive_view_record_and_claim() -> anyhow::Result<()> {
    let client = client().await?;
    let handler = Api::<RuntimeClass>::all(client.clone())
        .get(GVISOR)
        .await
        .context("RuntimeClass gvisor: start the node with PLAYPEN_NODE_GVISOR=1 tests/cluster/start-node.sh")?
        .handler;
    anyhow::ensure!(handler == "runsc", "RuntimeClass gvisor has handler {handler}, not runsc");
    let agent = live::agent_values()?;
    let agent: Vec<&str> = agent.iter().map(String::as_str).collect();
    let installed = setup::install_under(&client, "gvisor", GVISOR, &agent).await.context("helm install")?;
    let (main, viewer, cdp, recorded, pooled, live) = tokio::join!(
        session::drive_view_recover_delete(&client, &installed),
        viewer::a_real_browser_watches_and_drives(&client, &installed),
        cdp::playwright_and_puppeteer_drive_the_session(&client, &installed),
        recording::a_deleted_session_leaves_its_recordings(&client, &installed),
        pool::a_session_claims_a_warm_pod(&client, &installed),
        live::a_session_is_checkpointed_and_restored(&client, &installed),
    );
    let uninstalled = setup::uninstall(&client, &installed).await;
    main.context("the main session under gVisor (drive, egress, viewer, sandbox, recover, delete)")?;
    viewer.context("the viewer in a real browser, under gVisor")?;
    cdp.context("Playwright and Puppeteer over CDP, under gVisor")?;
    recorded.context("a recorded session's video and trace after its deletion, under gVisor")?;
    pooled.context("a claim from a warm pool under gVisor")?;
    live.context("a session suspended and resumed on the live path (checkpoint and restore of its sandbox)")?;
    uninstalled
}
