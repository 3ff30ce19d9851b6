//! Process plumbing of PID 1, beneath the rest of `run`: spawning children in
//! process groups of their own that die with the runtime, with backoff for
//! restarts ([`supervisor`]); reaping zombies and adopted orphans
//! ([`reaper`]); children's output, logged and tailed for diagnosis
//! ([`output`]); waking a task when a directory changes ([`dir_watch`]); and
//! the termination message the operator reads ([`report`]). Nothing here
//! knows what the children are.

pub(crate) mod dir_watch;
pub(crate) mod output;
pub(crate) mod reaper;
pub(crate) mod report;
pub(crate) mod supervisor;
