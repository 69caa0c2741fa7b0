//! Archives kept in a bucket of an S3-compatible object store (AWS S3, MinIO, Ceph RGW, …)
//! through `object_store`: one object per backup at `<prefix>/<cluster>/<backup>.tar.gz`,
//! which every replica reads whichever wrote it.
//!
//! An archive is written with a single PutObject request, never a multipart upload: S3 makes
//! an object visible only once its PUT has completed, and a failed or interrupted PUT leaves
//! no object (or the previous one), so a reader never sees half an archive.

use async_trait::async_trait;
use object_store::aws::AmazonS3;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use secrecy::{ExposeSecret, SecretString};
use uuid::Uuid;

use super::{relative_path, ArchiveStore};
use crate::{Error, Result};

pub use super::s3_config::S3Config;

/// Keeps archives in a bucket. `Debug` names the bucket, never a credential.
pub struct S3Archives {
    client: AmazonS3,
    /// `S3 bucket 'b' at https://…`, for logged messages.
    place: String,
    /// The bucket's name, for messages users see.
    bucket: String,
    prefix: String,
    /// Kept only to scrub it from messages, should a library ever echo it.
    secret: SecretString,
}

impl std::fmt::Debug for S3Archives {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Archives")
            .field("place", &self.place)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl S3Archives {
    /// The store `config` describes; `Invalid` naming the field at fault. Nothing is asked of
    /// the store yet: a bucket that cannot be reached fails the first backup, with why.
    pub fn new(config: &S3Config) -> Result<Self> {
        Ok(Self {
            client: config.client()?,
            place: config.describe(),
            bucket: config.bucket.trim().to_owned(),
            prefix: config.checked_prefix()?,
            secret: config.secret_access_key.clone(),
        })
    }

    /// The object key of the archive of `backup` of `cluster`.
    pub fn key(&self, cluster: Uuid, backup: Uuid) -> String {
        match self.prefix.as_str() {
            "" => relative_path(cluster, backup),
            prefix => format!("{prefix}/{}", relative_path(cluster, backup)),
        }
    }

    fn path(&self, cluster: Uuid, backup: Uuid) -> Path {
        Path::from(self.key(cluster, backup))
    }

    /// `message` with the secret access key, should it be there, replaced.
    fn scrub(&self, message: String) -> String {
        let secret = self.secret.expose_secret();
        if secret.is_empty() {
            message
        } else {
            message.replace(secret, "[redacted]")
        }
    }

    fn failed(&self, what: &str, e: &object_store::Error) -> Error {
        Error::Backend(self.scrub(format!(
            "cannot {what} a backup archive in {}: {e}",
            self.place
        )))
    }

    /// Why an archive the bucket does not hold cannot be read (`e` the store's answer), in
    /// words users see (409): the bucket, not the endpoint.
    fn not_here(&self, cluster: Uuid, backup: Uuid, e: &object_store::Error) -> Error {
        if e.to_string().contains("NoSuchBucket") {
            return Error::Backend(format!("{} does not exist", self.place));
        }
        Error::Conflict(format!(
            "the backup's archive is not in S3 bucket '{}' (no object '{}': removed from the \
             bucket by hand, or the bucket or key prefix changed since it was written)",
            self.bucket,
            self.key(cluster, backup)
        ))
    }
}

#[async_trait]
impl ArchiveStore for S3Archives {
    /// One PutObject request: the object appears whole once it succeeds, or not at all.
    async fn put(&self, cluster: Uuid, backup: Uuid, bytes: &[u8]) -> Result<()> {
        self.client
            .put(
                &self.path(cluster, backup),
                PutPayload::from(bytes.to_vec()),
            )
            .await
            .map(drop)
            .map_err(|e| self.failed("store", &e))
    }

    async fn get(&self, cluster: Uuid, backup: Uuid) -> Result<Vec<u8>> {
        let found = match self.client.get(&self.path(cluster, backup)).await {
            Ok(found) => found,
            Err(e @ object_store::Error::NotFound { .. }) => {
                return Err(self.not_here(cluster, backup, &e))
            }
            Err(e) => return Err(self.failed("read", &e)),
        };
        let bytes = found.bytes().await.map_err(|e| self.failed("read", &e))?;
        Ok(bytes.to_vec())
    }

    async fn require(&self, cluster: Uuid, backup: Uuid) -> Result<()> {
        match self.client.head(&self.path(cluster, backup)).await {
            Ok(_) => Ok(()),
            Err(e @ object_store::Error::NotFound { .. }) => {
                Err(self.not_here(cluster, backup, &e))
            }
            Err(e) => Err(self.failed("read", &e)),
        }
    }

    async fn remove(&self, cluster: Uuid, backup: Uuid) -> Result<()> {
        match self.client.delete(&self.path(cluster, backup)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.failed("remove", &e)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn store(prefix: &str) -> S3Archives {
        S3Archives::new(&S3Config {
            endpoint: Some("http://127.0.0.1:9".into()),
            region: "us-east-1".into(),
            bucket: "kq".into(),
            prefix: prefix.into(),
            path_style: true,
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: SecretString::from("hunter2-secret"),
        })
        .unwrap()
    }

    #[test]
    fn keys_live_under_the_prefix() {
        let (c, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert_eq!(store("").key(c, b), format!("{c}/{b}.tar.gz"));
        assert_eq!(
            store("/kqueen/backups/").key(c, b),
            format!("kqueen/backups/{c}/{b}.tar.gz")
        );
        assert_eq!(
            store("x").path(c, b).as_ref(),
            format!("x/{c}/{b}.tar.gz"),
            "the key is used as it is"
        );
    }

    #[test]
    fn messages_never_hold_the_secret() {
        let s = store("");
        let shown = format!("{s:?}");
        assert!(
            shown.contains("kq") && !shown.contains("hunter2"),
            "{shown}"
        );
        let echoed = object_store::Error::Generic {
            store: "S3",
            source: "signature of hunter2-secret refused".into(),
        };
        let Error::Backend(m) = s.failed("store", &echoed) else {
            panic!("not Backend")
        };
        assert!(
            !m.contains("hunter2") && m.contains("S3 bucket 'kq'"),
            "{m}"
        );
    }

    #[tokio::test]
    async fn an_unreachable_store_is_a_backend_error() {
        // Port 9 (discard) is closed on test machines: the connection is refused at once.
        let s = store("p");
        let (c, b) = (Uuid::now_v7(), Uuid::now_v7());
        match s.require(c, b).await {
            Err(Error::Backend(m)) => assert!(m.contains("127.0.0.1:9"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
