//! Where the builder puts things inside the image.

/// Root of everything the builder adds.
pub const PLAYPEN_ROOT: &str = "/opt/playpen";
/// The verified Node interpreter.
pub const NODE_BIN: &str = "/opt/playpen/node/bin/node";
/// The npm-style project holding `node_modules/{@playwright/cli,playwright,playwright-core}`.
pub const CLI_PREFIX: &str = "/opt/playpen/cli";
/// The `@playwright/cli` package directory (`PLAYPEN_CLI_PACKAGE`).
pub const CLI_PACKAGE_DIR: &str = "/opt/playpen/cli/node_modules/@playwright/cli";
/// `playwright-cli` on PATH: a wrapper pinning [`NODE_BIN`].
pub const CLI_WRAPPER: &str = "/usr/local/bin/playwright-cli";
/// Playwright's browser cache (`PLAYWRIGHT_BROWSERS_PATH`) for `source: playwright`.
pub const BROWSERS_DIR: &str = "/opt/playpen/browsers";
/// Where an `archive` Chromium is unpacked.
pub const CHROMIUM_ARCHIVE_DIR: &str = "/opt/playpen/chromium";
/// Launch-config defaults the image carries (the operator's Secret overrides them).
pub const LAUNCH_DEFAULTS: &str = "/etc/playpen/launch-defaults.json";
/// The session runtime (operator contract).
pub const SESSION_RUNTIME_BIN: &str = "/usr/local/bin/playpen-session";
/// HOME in the Pod (an emptyDir; the root filesystem is read-only).
pub const HOME: &str = "/var/lib/playpen/home";
/// The layer tar's file name in the build context.
pub const LAYER_TAR: &str = "playpen-layer.tar";
/// The Chromium archive's file name in the build context.
pub const CHROMIUM_ARCHIVE: &str = "chromium-archive.tar.gz";
