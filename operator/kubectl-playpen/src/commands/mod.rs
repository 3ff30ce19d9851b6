//! One module per subcommand, and what more than one of them needs.

pub mod cdp;
pub mod complete;
pub mod completion;
pub mod copy;
pub mod egress;
pub mod fork;
pub mod logs;
pub mod ls;
pub mod new;
pub mod record;
pub mod run;
pub mod snapshot;
pub mod suspend;
pub mod view;

use playpen_api::BrowserSession;

use crate::connect::Cluster;
use crate::error::Result;
use crate::remote::Target;
use crate::sessions;

/// The browser container's name.
pub const BROWSER: &str = "browser";

/// Session `name` and its browser container.
pub async fn browser<'a>(cluster: &'a Cluster, name: &str) -> Result<(BrowserSession, Target<'a>)> {
    let session = sessions::get(cluster, name).await?;
    let target = Target {
        cluster,
        session: format!("{}/{name}", cluster.namespace),
        pod: sessions::pod_name(&session),
        container: BROWSER,
    };
    Ok((session, target))
}

/// Waits for Ctrl-C (or SIGTERM).
pub async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
