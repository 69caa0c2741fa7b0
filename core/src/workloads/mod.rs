//! Objects KQueen applies to clusters: applications and addons.

pub mod manifest;
