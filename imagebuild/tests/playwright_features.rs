//! The image's default `--disable-features` replaces playwright-core's own
//! list (Chromium keeps only the last), so it must still hold every feature
//! the pinned playwright-core disables. Checked against the installed CLI
//! (`PLAYPEN_TEST_CLI_PREFIX`, set by `tests/run.sh` from
//! `tests/session/setup.sh`).

use playpen_imagebuild::dockerfile::default_chromium_args;

#[test]
fn our_disabled_features_cover_the_installed_playwrights() {
    let prefix = std::env::var("PLAYPEN_TEST_CLI_PREFIX")
        .expect("PLAYPEN_TEST_CLI_PREFIX: run tests/session/setup.sh and export its last line (tests/run.sh does)");
    let core = std::path::Path::new(&prefix).join("node_modules/playwright-core/lib");
    let bundle = ["coreBundle.js", "server/chromium/chromiumSwitches.js"]
        .iter()
        .find_map(|f| std::fs::read_to_string(core.join(f)).ok().filter(|t| t.contains("disabledFeatures = [")))
        .expect("playwright-core's chromium switches");
    let start = bundle.find("disabledFeatures = [").unwrap();
    let list = &bundle[start..start + bundle[start..].find(']').unwrap()];
    let theirs: Vec<&str> = list
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('"'))
        .map(|l| l.trim_end_matches(',').trim_matches('"'))
        .collect();
    assert!(theirs.len() > 5, "{list}");
    let args = default_chromium_args();
    let ours = args.iter().find_map(|a| a.strip_prefix("--disable-features=")).unwrap();
    let ours: Vec<&str> = ours.split(',').collect();
    for feature in theirs {
        assert!(ours.contains(&feature), "playwright-core disables {feature}; chromium-args.json must too");
    }
}
