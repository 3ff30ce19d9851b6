//! Image builder.
