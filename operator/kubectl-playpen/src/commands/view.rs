//! `kubectl playpen view NAME [--port LOCAL] [--open]`: a local tunnel to
//! the session's viewer, serving until Ctrl-C.

use crate::cli::ViewArgs;
use crate::connect::Cluster;
use crate::error::Result;
use crate::sessions;
use crate::tunnel::SessionTunnel;

/// The command that opens `url`: `$BROWSER` (its first `:`-separated entry,
/// `%s` replaced by the URL or the URL appended), else `open` on macOS and
/// `xdg-open` elsewhere.
pub fn opener(url: &str, browser_env: Option<&str>, macos: bool) -> Vec<String> {
    let from_env = browser_env
        .and_then(|b| b.split(':').map(str::trim).find(|entry| !entry.is_empty()))
        .map(|entry| entry.split_whitespace().map(str::to_owned).collect::<Vec<_>>());
    match from_env {
        Some(mut words) => {
            if words.iter().any(|w| w.contains("%s")) {
                for word in &mut words {
                    *word = word.replace("%s", url);
                }
            } else {
                words.push(url.to_owned());
            }
            words
        }
        None => vec![if macos { "open" } else { "xdg-open" }.to_owned(), url.to_owned()],
    }
}

/// Starts a browser on `url`; a failure is a warning, the tunnel serves on.
pub fn open_browser(url: &str) {
    let browser = std::env::var("BROWSER").ok();
    let command = opener(url, browser.as_deref(), cfg!(target_os = "macos"));
    let Some((program, args)) = command.split_first() else { return };
    let spawned = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        eprintln!("warning: could not open a browser with {program}: {e}; open {url} yourself");
    }
}

/// Runs `view` until Ctrl-C.
pub async fn run(cluster: &Cluster, args: ViewArgs) -> Result<()> {
    let ns = cluster.namespace.as_str();
    let SessionTunnel { session, pod, port, via, tunnel } =
        SessionTunnel::open(cluster, &args.name, sessions::viewer_port, args.port, args.via).await?;
    let url = format!("http://127.0.0.1:{}/", tunnel.local_addr()?.port());
    println!("{url}");
    match sessions::phase(session.status.as_ref()) {
        "Ready" => {}
        "-" => {
            eprintln!("note: BrowserSession {ns}/{} has no status yet; the viewer answers once it is Ready", args.name)
        }
        phase => eprintln!("note: BrowserSession {ns}/{} is {phase}; the viewer answers once it is Ready", args.name),
    }
    eprintln!(
        "forwarding {url} to the viewer of BrowserSession {ns}/{} (Pod {pod}, port {port}, {}); Ctrl-C to stop",
        args.name,
        via.describe()
    );
    if args.open {
        open_browser(&url);
    }
    tunnel.serve_until(super::interrupted()).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1:1234/";

    #[test]
    fn platform_openers() {
        assert_eq!(opener(URL, None, false), ["xdg-open", URL]);
        assert_eq!(opener(URL, None, true), ["open", URL]);
        assert_eq!(opener(URL, Some(""), false), ["xdg-open", URL], "an empty $BROWSER counts as none");
    }

    #[test]
    fn browser_env_is_honoured() {
        assert_eq!(opener(URL, Some("firefox"), false), ["firefox", URL]);
        assert_eq!(opener(URL, Some("firefox --new-tab"), false), ["firefox", "--new-tab", URL]);
        assert_eq!(opener(URL, Some("w3m %s -dump"), false), ["w3m", URL, "-dump"]);
        assert_eq!(opener(URL, Some(":chromium:firefox"), false), ["chromium", URL], "the first entry");
    }
}
