//! The browser itself: whether the one the launch config names is installed
//! ([`readiness`]), the owner-only socket namespace its daemon listens in
//! ([`namespace`]), the supervised playwright-cli daemon with its restarts
//! ([`daemon`]), the image's default arguments on its launch config
//! ([`launch_defaults`]), its persistent profile and auth state ([`profile`],
//! and [`auth`] for a state delivered after the start), its video and trace
//! recordings ([`recording`]) with their video segments ([`segments`]) and
//! its graceful close ([`shutdown`]). What the
//! readiness verdict ([`crate::probe`]) and the fatal errors read of it is
//! re-exported here.

pub(crate) mod auth;
pub(crate) mod daemon;
pub(crate) mod launch_defaults;
pub(crate) mod namespace;
pub(crate) mod prepare;
pub(crate) mod profile;
pub(crate) mod readiness;
pub(crate) mod recording;
pub(crate) mod segments;
pub(crate) mod shutdown;

pub(crate) use namespace::daemon_sockets;
pub(crate) use readiness::BrowserMissing;
pub(crate) use recording::not_yet_recording;
