//! Real part: the npm registry (reachable through this machine's
//! TLS-intercepting proxy, whose CA is in the system bundle). Locks the pinned
//! CLI with Playwright's own Chromium source: the closure is exactly
//! @playwright/cli + playwright + playwright-core at one version, and the
//! Chromium revision comes from the locked playwright-core's browsers.json.

use playpen_imagebuild::fetch::{default_cache_dir, FetchConfig, Fetcher};
use playpen_imagebuild::lock::LockedChromium;
use playpen_imagebuild::resolve;
use playpen_imagebuild::spec::parse_spec;

#[tokio::test]
async fn the_pinned_cli_closure_and_chromium_revision_lock_from_the_registry() {
    let spec = parse_spec(
        "base: {image: playpen/base:bookworm}\nnode: {version: 24.22.3}\ncli: {version: 0.1.22}\nchromium: {source: playwright}\n",
        "test",
    )
    .unwrap();
    let f = Fetcher::new(&FetchConfig {
        registry: spec.registry.npm.clone(),
        ca_bundle: None,
        token_env: None,
        cache_dir: default_cache_dir(),
    })
    .unwrap();
    let packages = resolve::resolve_cli(&f, &spec.registry.npm, "0.1.22").await.unwrap_or_else(|e| {
        panic!("the npm registry must be reachable for this test ({e}); check the proxy and /etc/ssl/certs")
    });
    let names: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["@playwright/cli", "playwright", "playwright-core"]);
    assert_eq!(packages[1].version, packages[2].version, "playwright and playwright-core share one pinned version");
    assert!(packages.iter().all(|p| p.integrity.algorithm() == "sha512"));

    let chromium = resolve::resolve_chromium(&f, &spec, &packages).await.unwrap();
    let LockedChromium::Playwright { revision, .. } = chromium else { panic!("{chromium:?}") };
    assert!(revision.parse::<u32>().is_ok(), "revision {revision}");
    eprintln!("playwright-core {} pins chromium revision {revision}", packages[2].version);

    // An absent version is classified, with the package named.
    let err = resolve::resolve_cli(&f, &spec.registry.npm, "0.0.0-does-not-exist").await.unwrap_err();
    assert_eq!(playpen_imagebuild::failure::Classify::class(&err).exit_code(), 15, "{err}");
}
