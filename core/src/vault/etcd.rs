//! The vault's etcd backend (KQueen's original store). It keeps sealed strings only, at
//!
//! ```text
//! <prefix>/global/secrets/<name>               scope "global"
//! <prefix>/tenants/<uuid>/secrets/<name>       scope "tenant/<uuid>"
//! ```
//!
//! One key prefix per tenant lets etcd itself enforce isolation when an operator wants it: a
//! role granted `readwrite` on the prefix [`EtcdBackend::tenant_prefix`] reads that tenant's
//! secrets and nothing else. Names are one key segment (no `/`, no control characters), so a
//! name can never reach into another tenant's or another kind of key.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{Client, ConnectOptions, GetOptions};
use uuid::Uuid;

use super::{SecretBackend, SecretRef};
use crate::{Error, Result, ValidationError};

/// Keys read per range request when listing (etcd answers in pages of at most this many).
const PAGE: i64 = 500;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// gRPC's PERMISSION_DENIED (etcd-client does not re-export tonic's `Code`).
const GRPC_PERMISSION_DENIED: i32 = 7;

/// Sealed secrets in etcd. Cheap to clone (the client is a handle to one channel).
#[derive(Clone)]
pub struct EtcdBackend {
    client: Client,
    prefix: String,
}

impl fmt::Debug for EtcdBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdBackend")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl EtcdBackend {
    /// Connects to etcd at `endpoints` (`http://host:port`) and checks that it answers.
    /// `prefix` is where KQueen's keys live (e.g. `/kqueen`; trailing `/` ignored; may be
    /// empty). `credentials` (user, password) authenticate when etcd has auth enabled; the
    /// token is refreshed when it expires.
    pub async fn connect(
        endpoints: &[String],
        prefix: &str,
        credentials: Option<(String, String)>,
    ) -> Result<Self> {
        if endpoints.is_empty() {
            return Err(Error::Backend("etcd: no endpoints configured".into()));
        }
        let prefix = prefix.trim_end_matches('/');
        if prefix.chars().any(char::is_control) {
            return Err(Error::Backend(
                "etcd: the key prefix contains control characters".into(),
            ));
        }
        let mut options = ConnectOptions::new()
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_timeout(REQUEST_TIMEOUT)
            .with_keep_alive(Duration::from_secs(30), Duration::from_secs(10));
        if let Some((user, password)) = credentials {
            options = options
                .with_user(user, password)
                .with_auto_token_refresh(true);
        }
        let client = Client::connect(endpoints, Some(options))
            .await
            .map_err(backend)?;
        let this = Self {
            client,
            prefix: prefix.to_owned(),
        };
        this.probe().await?;
        Ok(this)
    }

    /// The key prefix (without a trailing `/`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Where a tenant's keys live (`<prefix>/tenants/<uuid>/`): the range to grant a
    /// per-tenant etcd role.
    pub fn tenant_prefix(&self, tenant: Uuid) -> String {
        format!("{}/tenants/{tenant}/", self.prefix)
    }

    /// A cheap read that proves etcd answers. A user whose role covers only part of the
    /// prefix (one tenant) is refused this range, which still proves the server is there.
    async fn probe(&self) -> Result<()> {
        let key = format!("{}/global/secrets/", self.prefix);
        let options = GetOptions::new().with_prefix().with_count_only();
        match self.client.kv_client().get(key, Some(options)).await {
            Ok(_) => Ok(()),
            Err(etcd_client::Error::GRpcStatus(s)) if s.code() as i32 == GRPC_PERMISSION_DENIED => {
                Ok(())
            }
            Err(e) => Err(backend(e)),
        }
    }

    fn key(&self, at: &SecretRef) -> Result<String> {
        check_name(&at.name)?;
        let scope = if at.scope == "global" {
            format!("{}/global/secrets/", self.prefix)
        } else if let Some(id) = at.scope.strip_prefix("tenant/") {
            // Only the canonical form, so that one scope has exactly one key prefix.
            let tenant = Uuid::parse_str(id)
                .ok()
                .filter(|u| u.to_string() == id)
                .ok_or_else(|| invalid("the tenant of a secret scope must be a UUID"))?;
            format!("{}secrets/", self.tenant_prefix(tenant))
        } else {
            return Err(invalid("a secret scope is 'global' or 'tenant/<uuid>'"));
        };
        Ok(scope + &at.name)
    }

    /// Every key and value under `prefix` at one `revision` (0: the current one, which is
    /// then set so that later pages and ranges read the same snapshot).
    async fn scan(&self, prefix: &str, revision: &mut i64) -> Result<Vec<(String, String)>> {
        let end = range_end(prefix.as_bytes());
        let mut start = prefix.as_bytes().to_vec();
        let mut kv = self.client.kv_client();
        let mut out = Vec::new();
        loop {
            let mut options = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
            if *revision > 0 {
                options = options.with_revision(*revision);
            }
            let resp = kv
                .get(start.clone(), Some(options))
                .await
                .map_err(backend)?;
            if *revision == 0 {
                *revision = resp.header().map_or(0, |h| h.revision());
            }
            for item in resp.kvs() {
                let key = item
                    .key_str()
                    .map_err(|_| Error::Corrupt("etcd: a secret key is not UTF-8".into()))?;
                let value = item.value_str().map_err(|_| {
                    Error::Corrupt(format!("etcd: the value of {key} is not UTF-8"))
                })?;
                out.push((key.to_owned(), value.to_owned()));
            }
            match resp.kvs().last() {
                Some(last) if resp.more() => {
                    start = last.key().to_vec();
                    start.push(0);
                }
                _ => return Ok(out),
            }
        }
    }
}

#[async_trait]
impl SecretBackend for EtcdBackend {
    #[tracing::instrument(skip_all, fields(scope = %at.scope, name = %at.name))]
    async fn put_sealed(&self, at: &SecretRef, sealed: &str) -> Result<()> {
        let key = self.key(at)?;
        self.client
            .kv_client()
            .put(key, sealed, None)
            .await
            .map_err(backend)?;
        Ok(())
    }

    #[tracing::instrument(skip_all, fields(scope = %at.scope, name = %at.name))]
    async fn replace_sealed(&self, at: &SecretRef, expected: &str, sealed: &str) -> Result<bool> {
        use etcd_client::{Compare, CompareOp, Txn, TxnOp};
        let key = self.key(at)?;
        let txn = Txn::new()
            .when([Compare::value(key.clone(), CompareOp::Equal, expected)])
            .and_then([TxnOp::put(key, sealed, None)]);
        let resp = self.client.kv_client().txn(txn).await.map_err(backend)?;
        Ok(resp.succeeded())
    }

    #[tracing::instrument(skip_all, fields(scope = %at.scope, name = %at.name))]
    async fn get_sealed(&self, at: &SecretRef) -> Result<Option<String>> {
        let key = self.key(at)?;
        let resp = self
            .client
            .kv_client()
            .get(key, None)
            .await
            .map_err(backend)?;
        match resp.kvs().first() {
            Some(item) => item.value_str().map(|v| Some(v.to_owned())).map_err(|_| {
                Error::Corrupt(format!(
                    "etcd: the secret {}/{} is not UTF-8",
                    at.scope, at.name
                ))
            }),
            None => Ok(None),
        }
    }

    #[tracing::instrument(skip_all, fields(scope = %at.scope, name = %at.name))]
    async fn delete_sealed(&self, at: &SecretRef) -> Result<bool> {
        let key = self.key(at)?;
        let resp = self
            .client
            .kv_client()
            .delete(key, None)
            .await
            .map_err(backend)?;
        Ok(resp.deleted() > 0)
    }

    /// Reads `<prefix>/global/secrets/` and `<prefix>/tenants/` at one revision. Keys under a
    /// tenant that are not secrets are skipped; a key under `secrets/` that does not parse is
    /// an error, so rotation never silently leaves a secret under an old key.
    #[tracing::instrument(skip_all)]
    async fn list_sealed(&self) -> Result<Vec<(SecretRef, String)>> {
        let mut revision = 0;
        let mut out = Vec::new();
        let global = format!("{}/global/secrets/", self.prefix);
        for (key, sealed) in self.scan(&global, &mut revision).await? {
            let name = &key[global.len()..];
            check_name(name).map_err(|_| unparsable(&key))?;
            out.push((SecretRef::global(name), sealed));
        }
        let tenants = format!("{}/tenants/", self.prefix);
        for (key, sealed) in self.scan(&tenants, &mut revision).await? {
            let mut parts = key[tenants.len()..].splitn(3, '/');
            let (Some(id), Some("secrets"), Some(name)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let tenant = Uuid::parse_str(id)
                .ok()
                .filter(|u| u.to_string() == id)
                .ok_or_else(|| unparsable(&key))?;
            check_name(name).map_err(|_| unparsable(&key))?;
            out.push((SecretRef::tenant(tenant, name), sealed));
        }
        Ok(out)
    }
}

/// A secret name: `/`-separated non-empty segments, no control characters.
fn check_name(name: &str) -> Result<()> {
    // Names are paths below the scope's `secrets/` prefix (`cluster/<id>/kubeconfig`): '/'
    // separates segments, none of which may be empty, '.' or '..'.
    let bad_segment = name
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..");
    if bad_segment || name.chars().any(char::is_control) {
        return Err(invalid(
            "a secret name is '/'-separated non-empty segments (not '.' or '..') without control characters",
        ));
    }
    Ok(())
}

fn invalid(message: &str) -> Error {
    Error::Invalid(ValidationError::new("secret", message))
}

fn unparsable(key: &str) -> Error {
    Error::Corrupt(format!("etcd: key {key} is not a secret address"))
}

/// The end of the range that holds every key starting with `prefix`.
pub(crate) fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // All 0xff (or empty): to the end of the keyspace.
    vec![0]
}

/// etcd failures as domain errors. gRPC statuses keep their code and etcd's message (which
/// names neither keys' values nor credentials); nothing else of the request is added.
fn backend(e: etcd_client::Error) -> Error {
    match e {
        etcd_client::Error::GRpcStatus(s) => Error::Backend(format!(
            "etcd: {} ({})",
            s.message(),
            s.code().description()
        )),
        other => Error::Backend(format!("etcd: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_ends() {
        assert_eq!(range_end(b"/kq/tenants/"), b"/kq/tenants0".to_vec());
        assert_eq!(range_end(b"a\xff"), b"b".to_vec());
        assert_eq!(range_end(b"\xff\xff"), vec![0]);
    }

    #[test]
    fn names_are_slash_separated_segments() {
        assert!(check_name("cluster-1.kubeconfig").is_ok());
        assert!(check_name("cluster/0193/kubeconfig").is_ok());
        for bad in ["", "a//b", "/a", "a/", "../x", "a/./b", "a\nb", "a\0"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
