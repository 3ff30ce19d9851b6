//! The binary's small subcommands and its usage errors.

mod support;

use support::run_bin;

fn stdout_of(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_playpen-imagebuild"))
        .args(args)
        .output()
        .expect("running the binary");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn schema_subcommand_prints_the_published_schema() {
    let published =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/image-spec.schema.json")).unwrap();
    assert_eq!(stdout_of(&["schema"]), published);
}

#[test]
fn seccomp_subcommand_prints_the_charts_profile() {
    let chart =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../charts/playpen/files/seccomp/chromium.json"))
            .unwrap();
    assert_eq!(stdout_of(&["seccomp-profile"]), chart);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chromium.json");
    stdout_of(&["seccomp-profile", "--output", out.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(out).unwrap(), chart);
}

#[test]
fn the_example_spec_and_lock_are_valid_and_the_help_lists_exit_codes() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/debian-chromium.yaml");
    let spec = playpen_imagebuild::spec::read_spec(std::path::Path::new(example)).unwrap();
    playpen_imagebuild::validate::validate(&spec).unwrap();
    // The example lock, made by `lock` from the real registry, passes every hostile-input check.
    let lock = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/debian-chromium.lock.json");
    let lock = playpen_imagebuild::lock::Lock::read(std::path::Path::new(lock)).unwrap();
    playpen_imagebuild::validate::validate(&lock.spec).unwrap();
    let help = stdout_of(&["--help"]);
    assert!(help.contains("17 digest mismatch") && help.contains("13 registry rejected auth"), "{help}");
    assert!(help.contains("24 unsafe input"), "{help}");
    assert!(help.contains("25 the base image's package mirror unreachable"), "{help}");
}

#[test]
fn a_missing_spec_is_an_io_failure_and_a_lock_from_elsewhere_is_refused() {
    let (code, err) = run_bin(&["lock", "--spec", "/nonexistent/image.yaml"], &[]);
    assert_eq!(code, 11, "{err}");
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("x.lock.json");
    std::fs::write(&lock, "{\"lockVersion\": 1}").unwrap();
    let (code, err) = run_bin(&["build", "--lock", lock.to_str().unwrap(), "--tag", "x:y"], &[]);
    assert_eq!(code, 10, "{err}");
    assert!(err.contains("re-run `playpen-imagebuild lock`"), "{err}");
}

#[test]
fn push_credentials_that_contradict_each_other_fail_before_anything_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("never-read.lock.json");
    let args = ["build", "--lock", lock.to_str().unwrap(), "--tag", "127.0.0.1:1/x:y", "--push"];
    let (code, err) = run_bin(
        &args,
        &[("PLAYPEN_REGISTRY_USERNAME", "someone"), ("PLAYPEN_REGISTRY_PASSWORD", ""), ("PLAYPEN_REGISTRY_TOKEN", "")],
    );
    assert_eq!(code, 22, "{err}");
    assert!(err.contains("PLAYPEN_REGISTRY_USERNAME is set but PLAYPEN_REGISTRY_PASSWORD is not"), "{err}");
    assert!(err.contains("failure: PushAuthRejected (exit 22)"), "{err}");
    let (code, err) = run_bin(&[&args[..], &["--skip-verify"]].concat(), &[]);
    assert_eq!(code, 2, "only a verified image is pushed: {err}");
    assert!(err.contains("--skip-verify"), "{err}");
    let help = stdout_of(&["build", "--help"]);
    assert!(help.contains("--push") && help.contains("PLAYPEN_REGISTRY_PASSWORD"), "{help}");
}
