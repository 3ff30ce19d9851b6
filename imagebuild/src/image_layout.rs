//! Where the builder puts things inside the image. The paths the Pod relies on
//! are the in-image contract stated once in [`playpen_api::layout`] and
//! re-exported here; only the build context's own file names, the npm name of
//! the CLI package and the base image's shell are the builder's alone.

pub use playpen_api::layout::{
    env, BROWSERS_DIR, CHROMIUM_ARCHIVE_DIR, CLI_PACKAGE_DIR, CLI_PREFIX, CLI_WRAPPER, DATA_HOME, HOME_DIR, IMAGE_ROOT,
    LAUNCH_DEFAULTS, NODE_BIN, SESSION_RUNTIME_BIN, TMP_DIR,
};

/// The npm name of the CLI package, installed at [`CLI_PACKAGE_DIR`].
pub const CLI_PACKAGE: &str = "@playwright/cli";
/// The shell every supported base image has (Dockerfile `SHELL`, verification runs).
pub const SHELL: &str = "/bin/sh";
/// The layer tar's file name in the build context.
pub const LAYER_TAR: &str = "playpen-layer.tar";
/// The Chromium archive's file name in the build context.
pub const CHROMIUM_ARCHIVE: &str = "chromium-archive.tar.gz";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_package_directory_is_the_npm_name_under_the_prefix() {
        assert_eq!(CLI_PACKAGE_DIR, format!("{CLI_PREFIX}/node_modules/{CLI_PACKAGE}"));
    }
}
