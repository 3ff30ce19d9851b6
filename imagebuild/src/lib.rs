//! `playpen-imagebuild`: a declarative spec, a lock that pins every download to a
//! digest, a verified Node/`@playwright/cli` layer laid out as npm would, OS
//! packages for the base's family, and a build and verification through Docker Engine.
//!
//! Pure modules (no I/O): [`spec`], [`validate`], [`os_release`], [`packages`],
//! [`dockerfile`], [`mirror`], [`labels`], [`lock`], [`digest`], [`layer`], [`redact`],
//! [`untrusted`] (checks of every name and path from the registry, a lock or a tarball).
//! I/O at the edges: [`fetch`] (HTTPS, cache), [`resolve`] (lock), [`engine`] (Docker),
//! [`push`] (`--push` through the engine).

pub mod build;
pub mod digest;
pub mod dockerfile;
pub mod engine;
pub mod error;
pub mod failure;
pub mod fetch;
pub mod image_layout;
pub mod labels;
pub mod layer;
pub mod lock;
pub mod mirror;
pub mod oci_layout;
pub mod os_release;
pub mod packages;
pub mod push;
pub mod redact;
pub mod resolve;
pub mod seccomp;
pub mod spec;
pub mod untrusted;
pub mod validate;
pub mod verify;
