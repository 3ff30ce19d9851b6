//! The launch config the daemon gets when host rules apply: the session's
//! own, with Chromium sent through the egress proxy. Written to the
//! container's private `/tmp`, owner-only, like the CDP one.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Switches the runtime owns while the proxy runs: any of the session's own
/// would send traffic around the proxy or past its view.
const OWNED_PREFIXES: [&str; 7] = [
    "--proxy-server",
    "--proxy-bypass-list",
    "--proxy-pac-url",
    "--no-proxy-server",
    "--proxy-auto-detect",
    "--force-webrtc-ip-handling-policy",
    "--webrtc-ip-handling-policy",
];

/// Chromium's switches for the proxy on 127.0.0.1:`port` (docs/egress-hosts.md says why each).
pub(crate) fn proxy_args(port: u16) -> [String; 5] {
    [
        format!("--proxy-server=http://127.0.0.1:{port}"),
        // Removes the implicit loopback bypass: a page's http://localhost meets the rules too.
        "--proxy-bypass-list=<-loopback>".to_owned(),
        // WebRTC may not send UDP the proxy cannot see. Chromium 156 reads
        // this one (measured: with only the `--force-` spelling a page's STUN
        // request still left the browser; the node e2e caught it); the older
        // spelling stays for older builds.
        "--webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
        // HTTP/3 is UDP, which an HTTP proxy does not carry.
        "--disable-quic".to_owned(),
    ]
}

/// `config` with [`proxy_args`] in `browser.launchOptions.args`, the
/// session's own proxy switches and Playwright's `launchOptions.proxy`
/// (which Playwright turns into `--proxy-server`) removed.
pub(crate) fn with_proxy(mut config: Value, port: u16) -> Result<Value, String> {
    let options = config
        .as_object_mut()
        .ok_or("the launch config is not a JSON object")?
        .entry("browser")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("browser in the launch config is not an object")?
        .entry("launchOptions")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("browser.launchOptions in the launch config is not an object")?;
    if options.remove("proxy").is_some() {
        tracing::warn!("launchOptions.proxy is replaced by the egress proxy (host rules apply; no upstream proxy)");
    }
    let args = options
        .entry("args")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or("browser.launchOptions.args in the launch config is not an array")?;
    args.retain(|arg| !arg.as_str().is_some_and(|a| OWNED_PREFIXES.iter().any(|p| a.starts_with(p))));
    args.extend(proxy_args(port).into_iter().map(Value::String));
    Ok(config)
}

/// Reads `source`, adds the proxy, writes `<dir>/launch-egress.json` (0600).
pub(crate) fn write(source: &Path, dir: &Path, port: u16) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let config: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", source.display()))?;
    let bytes = serde_json::to_vec_pretty(&with_proxy(config, port)?).map_err(|e| e.to_string())?;
    let path = dir.join("launch-egress.json");
    crate::run::browser::profile::write_owner_only(&path, &bytes)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_proxy_switches_replace_the_sessions_own() {
        let config = json!({"browser": {"browserName": "chromium", "launchOptions": {
            "args": ["--no-proxy-server", "--proxy-server=socks5://x:1", "--lang=de", "--webrtc-ip-handling-policy=default"],
            "proxy": {"server": "http://corp:3128"}
        }}});
        let derived = with_proxy(config, 40123).expect("derived");
        let options = &derived["browser"]["launchOptions"];
        assert_eq!(options.get("proxy"), None);
        assert_eq!(
            options["args"],
            json!([
                "--lang=de",
                "--proxy-server=http://127.0.0.1:40123",
                "--proxy-bypass-list=<-loopback>",
                "--webrtc-ip-handling-policy=disable_non_proxied_udp",
                "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
                "--disable-quic"
            ])
        );
        assert_eq!(derived["browser"]["browserName"], "chromium");
    }

    #[test]
    fn an_empty_config_gets_the_switches_and_a_bad_shape_is_refused() {
        let derived = with_proxy(json!({}), 1).expect("derived");
        assert_eq!(derived["browser"]["launchOptions"]["args"].as_array().map(Vec::len), Some(5));
        assert!(with_proxy(json!({"browser": {"launchOptions": {"args": "x"}}}), 1).is_err());
        assert!(with_proxy(json!([]), 1).is_err());
    }

    #[test]
    fn the_derived_config_is_written_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let source = dir.path().join("config.json");
        std::fs::write(&source, r#"{"browser": {}}"#).expect("write");
        let path = write(&source, dir.path(), 40123).expect("written");
        assert_eq!(std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777, 0o600);
        assert!(std::fs::read_to_string(&path).expect("read").contains("127.0.0.1:40123"));
    }
}
