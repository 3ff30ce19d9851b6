//! End to end on the single-node cluster (`tests/cluster/start-node.sh`):
//! the browser and operator images built by `tests/e2e/images.sh` (the
//! browser one with playpen-imagebuild) and imported into the node's
//! containerd, the chart installed with helm, BrowserSessions run by the real
//! kubelet, driven with the real playwright-cli and Chromium.
//!
//! One test: the chart's ClusterRoles are cluster-wide names, and the scenarios
//! share the installation. Independent scenarios run concurrently.

mod cdp;
mod clients;
mod egress_hosts;
mod fork;
mod hostile;
mod kubectl;
mod network;
mod plugin;
mod pool;
mod recording;
mod recordings_export;
mod session;
mod setup;
mod suspend;
mod viewer;

use anyhow::Context as _;
use playpen_tests::client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_drive_view_recover_delete() -> anyhow::Result<()> {
    let client = client().await?;
    let installed = setup::install(&client).await.context("step 1: helm install of the chart")?;
    let (b, system) = (installed.team_b.name.as_str(), installed.system.name.as_str());
    let (main, isolation, hostile, viewer, cdp, plugin, recorded, pooled, kept, hosts, exported, parked) = tokio::join!(
        session::drive_view_recover_delete(&client, &installed),
        session::isolation_and_disabled(&client, &installed),
        hostile::non_ascii_executable_is_reported_not_fatal(&client, b, system),
        viewer::a_real_browser_watches_and_drives(&client, &installed),
        cdp::playwright_and_puppeteer_drive_the_session(&client, &installed),
        plugin::plugin_drives_a_session(&client, &installed),
        recording::a_deleted_session_leaves_its_recordings(&client, &installed),
        pool::a_warm_pool_serves_sessions(&client, &installed),
        pool::a_claimed_session_keeps_its_settings(&client, &installed),
        egress_hosts::a_page_reaches_allowed_hosts_only(&client, &installed),
        recordings_export::segments_leave_the_pod_and_a_kill_is_marked(&client, &installed),
        async {
            suspend::sessions_park_and_come_back(&client, &installed).await?;
            fork::three_forks_start_from_a_snapshot(&client, &installed).await.context("fork")
        },
    );
    let survived = hostile::operator_never_restarted(&client, system).await;
    let uninstalled = setup::uninstall(&client, &installed).await;
    main.context("the main session (steps 2-4, 6-8)")?;
    isolation.context("the second team's session (steps 5, 6)")?;
    hostile.context("a tenant's non-ASCII executablePath")?;
    viewer.context("the viewer in a real browser")?;
    cdp.context("Playwright and Puppeteer over CDP")?;
    plugin.context("kubectl playpen on a real session")?;
    recorded.context("a recorded session's video and trace after its deletion")?;
    pooled.context("a warm pool on the kubelet")?;
    kept.context("a claimed session's own settings, whatever becomes of its pool")?;
    hosts.context("egress by host name through the in-Pod proxy")?;
    exported.context("recordings exported to the object store while the session runs")?;
    parked.context("sessions suspended and resumed on the State path, then forked")?;
    survived.context("the operator across the whole suite")?;
    uninstalled
}
