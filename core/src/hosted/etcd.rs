//! Tenancy on one shared etcd (the Kamaji design): every hosted control plane gets its own key
//! space, an etcd role with read-write on exactly that range, and an etcd user bound to the
//! role whose name is the common name of the API server's client certificate (kube-apiserver
//! cannot send an etcd password; etcd takes the user from the certificate when it runs with
//! `--client-cert-auth` and auth enabled).
//!
//! KQueen connects as etcd's `root` (or another user with the root role) through its own
//! client certificate. What etcd itself does not do, KQueen does: count each key space's keys
//! and bytes, and take write away from a key space (and give it back).

use std::time::Duration;

use etcd_client::{
    Certificate, Client, ConnectOptions, DeleteOptions, GetOptions, Identity, Permission,
    SortOrder, SortTarget, TlsOptions,
};

use super::pki::CertKey;

/// Where every hosted control plane keeps its data in the shared etcd.
pub const ROOT_PREFIX: &str = "/kqueen/hosted/";

/// The key space of one hosted control plane: `/kqueen/hosted/<name>/`. It always ends in
/// `/`, so that one control plane's range never covers another's (`/c1/` is not a prefix of
/// `/c12/`; a prefix without the slash was Kamaji's 2024 range bug).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpace {
    name: String,
}

impl KeySpace {
    /// `name`: 1 to 63 of `a-z`, `0-9` and `-` (a cluster id, in practice).
    pub fn new(name: &str) -> Result<Self, EtcdError> {
        let ok = !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(EtcdError::Invalid(format!(
                "'{name}' cannot name an etcd key space (1 to 63 of a-z, 0-9 and -)"
            )));
        }
        Ok(Self {
            name: name.to_owned(),
        })
    }

    /// The key space of a hosted cluster.
    pub fn for_cluster(id: uuid::Uuid) -> Self {
        Self {
            name: id.to_string(),
        }
    }

    /// `--etcd-prefix` of the control plane's API server.
    pub fn prefix(&self) -> String {
        format!("{ROOT_PREFIX}{}/", self.name)
    }

    /// The etcd user (and its role): the common name of the API server's etcd certificate.
    pub fn user(&self) -> String {
        format!("kqueen-hosted-{}", self.name)
    }
}

/// Keys and bytes (keys plus values) under one key space.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpaceUsage {
    pub keys: u64,
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("{0}")]
    Invalid(String),
    #[error("the shared etcd: {0}")]
    Etcd(String),
}

pub(super) fn etcd(e: etcd_client::Error) -> EtcdError {
    EtcdError::Etcd(e.to_string())
}

/// How KQueen reaches the shared etcd: endpoints (`https://…`), the etcd server's CA, and
/// KQueen's client certificate (a user with etcd's root role).
#[derive(Debug, Clone)]
pub struct EtcdAccess {
    pub endpoints: Vec<String>,
    pub server_ca_pem: String,
    pub client: CertKey,
}

/// A connection to the shared etcd as its administrator.
#[derive(Clone)]
pub struct SharedEtcd {
    client: Client,
}

/// Keys read per request when counting a key space.
const PAGE: i64 = 1_000;

impl SharedEtcd {
    /// The connection, for the other parts of [`super`] (a clone shares it).
    pub(super) fn client(&self) -> Client {
        self.client.clone()
    }

    pub async fn connect(access: &EtcdAccess, timeout: Duration) -> Result<Self, EtcdError> {
        if access.endpoints.is_empty() {
            return Err(EtcdError::Invalid("no etcd endpoint is configured".into()));
        }
        let key = std::str::from_utf8(access.client.key_pem.expose())
            .map_err(|_| EtcdError::Invalid("the etcd client key is not PEM".into()))?;
        let tls = TlsOptions::new()
            .ca_certificate(Certificate::from_pem(&access.server_ca_pem))
            .identity(Identity::from_pem(&access.client.cert_pem, key));
        let options = ConnectOptions::new()
            .with_tls(tls)
            .with_connect_timeout(timeout)
            .with_timeout(timeout);
        let client = Client::connect(&access.endpoints, Some(options))
            .await
            .map_err(etcd)?;
        Ok(Self { client })
    }

    /// Creates the role (read-write on the key space) and the user bound to it. Idempotent:
    /// what exists already is kept and completed.
    pub async fn open(&self, space: &KeySpace) -> Result<(), EtcdError> {
        let mut c = self.client.clone();
        let name = space.user();
        if let Err(e) = c.role_add(name.as_str()).await {
            if !already_exists(&e) {
                return Err(etcd(e));
            }
        }
        self.set_writable(space, true).await?;
        let no_password = etcd_client::UserAddOptions::new().with_no_pwd();
        if let Err(e) = c.user_add(name.as_str(), "", Some(no_password)).await {
            if !already_exists(&e) {
                return Err(etcd(e));
            }
        }
        c.user_grant_role(name.as_str(), name.as_str())
            .await
            .map_err(etcd)?;
        Ok(())
    }

    /// Gives the key space's user read-write (`true`) or read only (`false`) on its range.
    pub async fn set_writable(&self, space: &KeySpace, writable: bool) -> Result<(), EtcdError> {
        let prefix = space.prefix();
        let perm = if writable {
            Permission::read_write(prefix)
        } else {
            Permission::read(prefix)
        };
        // Granting the same range again replaces its permission type.
        self.client
            .clone()
            .role_grant_permission(space.user(), perm.with_prefix())
            .await
            .map_err(etcd)?;
        Ok(())
    }

    /// Whether the key space's user may write (None: it has no role).
    pub async fn writable(&self, space: &KeySpace) -> Result<Option<bool>, EtcdError> {
        let role = match self.client.clone().role_get(space.user()).await {
            Ok(r) => r,
            Err(e) if not_found(&e) => return Ok(None),
            Err(e) => return Err(etcd(e)),
        };
        let prefix = space.prefix().into_bytes();
        Ok(role
            .permissions()
            .iter()
            .find(|p| p.key() == prefix.as_slice())
            .map(|p| {
                let write = [
                    etcd_client::PermissionType::Write,
                    etcd_client::PermissionType::Readwrite,
                ];
                write.iter().any(|w| *w as i32 == p.get_type())
            }))
    }

    /// Counts the keys and bytes under the key space, a page at a time.
    pub async fn usage(&self, space: &KeySpace) -> Result<SpaceUsage, EtcdError> {
        let prefix = space.prefix().into_bytes();
        let end = crate::vault::range_end(&prefix);
        let mut from = prefix.clone();
        let mut usage = SpaceUsage::default();
        loop {
            let options = GetOptions::new()
                .with_range(end.clone())
                .with_limit(PAGE)
                .with_sort(SortTarget::Key, SortOrder::Ascend);
            let page = self
                .client
                .clone()
                .get(from.clone(), Some(options))
                .await
                .map_err(etcd)?;
            for kv in page.kvs() {
                usage.keys += 1;
                usage.bytes += (kv.key().len() + kv.value().len()) as u64;
            }
            match page.kvs().last() {
                Some(last) if page.more() => {
                    from = last.key().to_vec();
                    from.push(0);
                }
                _ => return Ok(usage),
            }
        }
    }

    /// Removes the key space's user and role, then every key under it. Returns how many keys
    /// were deleted. Idempotent.
    pub async fn remove(&self, space: &KeySpace) -> Result<u64, EtcdError> {
        let mut c = self.client.clone();
        // The user and its role first: an API server still running cannot write keys back
        // between the delete of the range and the end.
        for result in [
            c.user_delete(space.user()).await.map(drop),
            c.role_delete(space.user()).await.map(drop),
        ] {
            if let Err(e) = result {
                if !not_found(&e) {
                    return Err(etcd(e));
                }
            }
        }
        let deleted = c
            .delete(space.prefix(), Some(DeleteOptions::new().with_prefix()))
            .await
            .map_err(etcd)?
            .deleted();
        Ok(u64::try_from(deleted).unwrap_or(0))
    }
}

fn already_exists(e: &etcd_client::Error) -> bool {
    e.to_string().contains("already exists")
}

fn not_found(e: &etcd_client::Error) -> bool {
    e.to_string().contains("not found")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::KeySpace;
    use crate::vault::range_end as prefix_end;

    #[test]
    fn key_spaces_end_in_a_slash_and_never_cover_each_other() {
        let (c1, c12) = (KeySpace::new("c1").unwrap(), KeySpace::new("c12").unwrap());
        assert_eq!(c1.prefix(), "/kqueen/hosted/c1/");
        assert!(!c12.prefix().starts_with(&c1.prefix()));
        assert_eq!(c1.user(), "kqueen-hosted-c1");
        for bad in ["", "C1", "a/b", "a b", &"x".repeat(64), "../etc"] {
            assert!(KeySpace::new(bad).is_err(), "{bad:?}");
        }
        let id = uuid::Uuid::now_v7();
        assert_eq!(
            KeySpace::for_cluster(id).prefix(),
            format!("/kqueen/hosted/{id}/")
        );
    }

    #[test]
    fn the_range_end_follows_the_prefix() {
        assert_eq!(prefix_end(b"/a/"), b"/a0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }
}
