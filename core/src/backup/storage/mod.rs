//! Where backup archives are kept, one per backup at `<cluster>/<backup>.tar.gz`: a directory
//! ([`ArchiveDir`], the data directory's `backups/` by default) or a bucket of an
//! S3-compatible object store ([`S3Archives`]), picked from the configuration at start-up.
//! Either way a reader never sees half an archive, and the same errors mean the same thing:
//! `Conflict` for an archive the store does not hold (the message says where it looked),
//! `Backend` for a store that failed (the message names no secret).

mod dir;
mod s3;
mod s3_config;

use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use crate::Result;

pub use dir::ArchiveDir;
pub use s3::{S3Archives, S3Config};

/// A place that keeps backup archives. `Debug` names where, never a credential.
#[async_trait]
pub trait ArchiveStore: std::fmt::Debug + Send + Sync {
    /// Keeps `bytes` as the archive of `backup` of `cluster`, whole or not at all.
    async fn put(&self, cluster: Uuid, backup: Uuid, bytes: &[u8]) -> Result<()>;

    /// The archive of `backup`; `Conflict` when this store does not have it.
    async fn get(&self, cluster: Uuid, backup: Uuid) -> Result<Vec<u8>>;

    /// That this store has the archive of `backup` (without reading it); `Conflict` as
    /// [`ArchiveStore::get`] when it does not.
    async fn require(&self, cluster: Uuid, backup: Uuid) -> Result<()>;

    /// Removes the archive of `backup`, if there is one.
    async fn remove(&self, cluster: Uuid, backup: Uuid) -> Result<()>;
}

/// The archive store every replica's use cases share.
pub type Archives = Arc<dyn ArchiveStore>;

/// Where the archive of `backup` of `cluster` is, relative to the store's root:
/// `<cluster>/<backup>.tar.gz`.
fn relative_path(cluster: Uuid, backup: Uuid) -> String {
    format!("{cluster}/{backup}.tar.gz")
}
