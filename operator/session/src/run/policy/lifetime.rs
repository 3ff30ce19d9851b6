//! The maximum lifetime: `maxLifetimeSeconds` counted from the session's
//! start (`sessionStartedAt`), never from this process's, so neither a
//! restarted container nor a replacement Pod gets a fresh lifetime.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use playpen_api::runtime_config::RuntimeConfig;

use crate::config::load;

/// How long the session may still run: `max_seconds` from `started` (this
/// process's own start when unknown), at `now`. `None` is no limit.
pub fn lifetime_left(
    started: Option<SystemTime>,
    max_seconds: Option<i64>,
    process_start: SystemTime,
    now: SystemTime,
) -> Option<Duration> {
    let max = Duration::from_secs(u64::try_from(max_seconds?).ok()?);
    let ran = now.duration_since(started.unwrap_or(process_start)).unwrap_or(Duration::ZERO);
    Some(max.saturating_sub(ran))
}

/// Resolves once the session has run for `maxLifetimeSeconds` since it
/// started (`sessionStartedAt`, so a restarted container or a replacement
/// Pod does not get a fresh lifetime), re-read from `runtime.json` every
/// `every` (a ConfigMap change applies while running).
pub(crate) async fn lifetime_reached(config_path: PathBuf, mut config: RuntimeConfig, every: Duration) {
    let process_start = SystemTime::now();
    loop {
        let left =
            lifetime_left(config.session_started(), config.max_lifetime_seconds, process_start, SystemTime::now());
        let wake = match left {
            Some(left) if left.is_zero() => return,
            Some(left) => left.min(every),
            None => every,
        };
        tokio::time::sleep(wake).await;
        if let Ok(fresh) = load(&config_path) {
            config = fresh;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::lifetime_left;
    use std::time::{Duration, SystemTime};

    /// `minutes` past 08:00 on some day.
    fn at(minutes: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_112_000 + minutes * 60)
    }

    #[test]
    fn the_lifetime_counts_from_the_session_start_not_the_process_start() {
        // A container restarted 50 minutes into a one-hour session has 10 minutes left, not an hour.
        assert_eq!(lifetime_left(Some(at(0)), Some(3600), at(50), at(50)), Some(Duration::from_secs(600)));
        assert_eq!(lifetime_left(Some(at(0)), Some(3600), at(50), at(70)), Some(Duration::ZERO));
    }

    #[test]
    fn without_a_start_the_process_start_counts_and_without_a_limit_nothing() {
        let now = at(0) + Duration::from_secs(30);
        assert_eq!(lifetime_left(None, Some(60), at(0), now), Some(Duration::from_secs(30)));
        assert_eq!(lifetime_left(Some(at(0)), None, at(0), now), None);
        assert_eq!(lifetime_left(None, Some(-5), at(0), now), None, "admission refuses it; the runtime ignores it");
        // A start in the future (clock skew) leaves the whole lifetime.
        assert_eq!(lifetime_left(Some(at(60)), Some(60), at(0), now), Some(Duration::from_secs(60)));
    }
}
