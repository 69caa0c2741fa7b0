//! Archives kept in a directory (the data directory's `backups/` by default), one file per
//! backup at `<cluster>/<backup>.tar.gz`, written under a temporary name and renamed, so a
//! reader never sees half an archive. Replicas share them only through a shared volume.

use std::path::PathBuf;

use async_trait::async_trait;
use uuid::Uuid;

use super::{relative_path, ArchiveStore};
use crate::{Error, Result};

/// Keeps archives in a directory.
#[derive(Debug, Clone)]
pub struct ArchiveDir {
    root: PathBuf,
}

impl ArchiveDir {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    fn path(&self, cluster: Uuid, backup: Uuid) -> PathBuf {
        self.root.join(relative_path(cluster, backup))
    }

    fn io(what: &str, e: std::io::Error) -> Error {
        Error::Backend(format!("cannot {what} a backup archive: {e}"))
    }

    /// Why an archive this directory does not have cannot be read.
    fn not_here() -> Error {
        Error::Conflict(
            "the backup's archive is not in this KQueen's data directory (kept on another \
             replica's disk, or removed by hand)"
                .into(),
        )
    }
}

#[async_trait]
impl ArchiveStore for ArchiveDir {
    async fn put(&self, cluster: Uuid, backup: Uuid, bytes: &[u8]) -> Result<()> {
        let path = self.path(cluster, backup);
        let dir = path.parent().unwrap_or(&self.root);
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| Self::io("store", e))?;
        let partial = path.with_extension("partial");
        tokio::fs::write(&partial, bytes)
            .await
            .map_err(|e| Self::io("store", e))?;
        tokio::fs::rename(&partial, &path)
            .await
            .map_err(|e| Self::io("store", e))
    }

    /// `Conflict` when this directory does not have it (another replica's disk, or removed
    /// by hand).
    async fn get(&self, cluster: Uuid, backup: Uuid) -> Result<Vec<u8>> {
        match tokio::fs::read(self.path(cluster, backup)).await {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Self::not_here()),
            Err(e) => Err(Self::io("read", e)),
        }
    }

    async fn require(&self, cluster: Uuid, backup: Uuid) -> Result<()> {
        match tokio::fs::metadata(self.path(cluster, backup)).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Self::not_here()),
            Err(e) => Err(Self::io("read", e)),
        }
    }

    async fn remove(&self, cluster: Uuid, backup: Uuid) -> Result<()> {
        match tokio::fs::remove_file(self.path(cluster, backup)).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Self::io("remove", e)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn archives_are_kept_read_and_removed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = ArchiveDir::new(dir.path().join("backups"));
        let (c, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert!(matches!(store.get(c, b).await, Err(Error::Conflict(_))));
        assert!(matches!(store.require(c, b).await, Err(Error::Conflict(_))));
        store
            .put(c, b, b"archive")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(store.require(c, b).await.is_ok());
        assert_eq!(store.get(c, b).await.ok().as_deref(), Some(&b"archive"[..]));
        let file = dir.path().join(format!("backups/{c}/{b}.tar.gz"));
        assert!(file.is_file());
        store.remove(c, b).await.unwrap_or_else(|e| panic!("{e}"));
        store.remove(c, b).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(!file.exists());
    }
}
