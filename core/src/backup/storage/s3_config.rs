//! What reaching a bucket of an S3-compatible store takes, checked: the endpoint (AWS S3 when
//! none is given), region, bucket, key prefix, addressing style and static credentials; and
//! the `object_store` client built from it.

use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{BackoffConfig, ClientOptions, RetryConfig};
use secrecy::{ExposeSecret, SecretString};
use url::Url;

use crate::{Error, Result, ValidationError};

/// A bucket of an S3-compatible object store and the keys to it. `Debug` redacts the secret.
#[derive(Clone)]
pub struct S3Config {
    /// `https://s3.example.com` (MinIO, Ceph RGW, another provider); `None`: AWS S3 in
    /// `region`. An `http://` endpoint is used as given (plain HTTP, for local stores).
    pub endpoint: Option<String>,
    pub region: String,
    pub bucket: String,
    /// Folders under which archives are kept (`kqueen/backups`); empty: the bucket's root.
    pub prefix: String,
    /// `https://host/bucket/key` (MinIO, Ceph and most local stores need it) rather than
    /// `https://bucket.host/key` (virtual-hosted, AWS's default).
    pub path_style: bool,
    pub access_key_id: String,
    pub secret_access_key: SecretString,
}

impl std::fmt::Debug for S3Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Config")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("path_style", &self.path_style)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"[redacted]")
            .finish()
    }
}

fn invalid(field: &'static str, message: impl Into<String>) -> Error {
    Error::Invalid(ValidationError::new(field, message))
}

/// Requests are retried a few times on connection failures and server errors (never on a
/// refusal such as wrong credentials), within a minute.
const RETRIES: usize = 3;
const RETRY_WINDOW: Duration = Duration::from_secs(60);
/// An archive of a few hundred MiB over a slow link still fits.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl S3Config {
    /// The prefix without its outer slashes; `Invalid` (field `prefix`) unless it is made of
    /// letters, digits, `.`, `_`, `-` and single slashes, the characters every S3
    /// implementation keeps as they are in a key.
    pub(super) fn checked_prefix(&self) -> Result<String> {
        let prefix = self.prefix.trim().trim_matches('/');
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/');
        let bad_segment = prefix
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
        if !prefix.is_empty() && (!prefix.chars().all(allowed) || bad_segment) {
            return Err(invalid(
                "prefix",
                format!(
                    "'{prefix}' is not a key prefix: use letters, digits, '.', '_', '-' and \
                     single '/' between folder names"
                ),
            ));
        }
        Ok(prefix.to_owned())
    }

    /// The URL requests go to, up to the bucket: the endpoint with the bucket in the host
    /// name (virtual-hosted) or, for path-style addressing, the endpoint itself (the client
    /// adds `/<bucket>`). `None` without an endpoint (the client asks AWS S3 in the region).
    pub(super) fn base_url(&self) -> Result<Option<Url>> {
        let Some(endpoint) = self.endpoint.as_deref().map(str::trim) else {
            return Ok(None);
        };
        let mut url = Url::parse(endpoint)
            .map_err(|e| invalid("endpoint", format!("'{endpoint}' is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.query().is_some() {
            return Err(invalid(
                "endpoint",
                format!("'{endpoint}' is not an http:// or https:// URL without a query"),
            ));
        }
        if !self.path_style {
            let host = match url.host() {
                Some(url::Host::Domain(host)) => host.to_owned(),
                _ => {
                    return Err(invalid(
                        "path_style",
                        "virtual-hosted addressing puts the bucket in the endpoint's host \
                         name, which an IP address cannot hold: turn path-style addressing on",
                    ))
                }
            };
            url.set_host(Some(&format!("{}.{host}", self.bucket)))
                .map_err(|e| invalid("bucket", format!("not usable in a host name: {e}")))?;
        }
        Ok(Some(url))
    }

    /// The client of the bucket; `Invalid` naming the field at fault.
    pub(super) fn client(&self) -> Result<AmazonS3> {
        let bucket = self.bucket.trim();
        if bucket.is_empty() || bucket.contains(['/', ' ']) {
            return Err(invalid(
                "bucket",
                format!("'{bucket}' is not a bucket name"),
            ));
        }
        if self.access_key_id.trim().is_empty() {
            return Err(invalid("access_key_id", "is empty"));
        }
        if self.secret_access_key.expose_secret().is_empty() {
            return Err(invalid("secret_access_key", "is empty"));
        }
        let base = self.base_url()?;
        let mut builder = AmazonS3Builder::new()
            .with_region(self.region.trim())
            .with_bucket_name(bucket)
            .with_access_key_id(self.access_key_id.trim())
            .with_secret_access_key(self.secret_access_key.expose_secret())
            .with_virtual_hosted_style_request(!self.path_style)
            .with_retry(RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: RETRIES,
                retry_timeout: RETRY_WINDOW,
            })
            .with_client_options(
                ClientOptions::new()
                    .with_timeout(REQUEST_TIMEOUT)
                    .with_connect_timeout(CONNECT_TIMEOUT),
            );
        if let Some(url) = base {
            builder = builder
                .with_allow_http(url.scheme() == "http")
                .with_endpoint(url.as_str().trim_end_matches('/'));
        }
        builder
            .build()
            .map_err(|e| invalid("endpoint", format!("no S3 client for this bucket: {e}")))
    }

    /// Where requests go, for messages and logs.
    pub(super) fn describe(&self) -> String {
        match self.endpoint.as_deref().map(str::trim) {
            Some(endpoint) => format!("S3 bucket '{}' at {endpoint}", self.bucket.trim()),
            None => format!(
                "S3 bucket '{}' (AWS, {})",
                self.bucket.trim(),
                self.region.trim()
            ),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config() -> S3Config {
        S3Config {
            endpoint: Some("https://s3.example.com".into()),
            region: "eu-west-1".into(),
            bucket: "kq-backups".into(),
            prefix: String::new(),
            path_style: true,
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: SecretString::from("wJalrXUtnFEMI-hunter2"),
        }
    }

    fn field(e: Error) -> &'static str {
        match e {
            Error::Invalid(v) => v.field,
            other => panic!("not Invalid: {other:?}"),
        }
    }

    #[test]
    fn debug_redacts_the_secret() {
        let shown = format!("{:?}", config());
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("AKIDEXAMPLE") && shown.contains("kq-backups"));
    }

    #[test]
    fn addressing_puts_the_bucket_in_the_path_or_the_host() {
        let mut c = config();
        assert_eq!(
            c.base_url().unwrap().unwrap().as_str(),
            "https://s3.example.com/"
        );
        c.path_style = false;
        assert_eq!(
            c.base_url().unwrap().unwrap().as_str(),
            "https://kq-backups.s3.example.com/"
        );
        c.endpoint = Some("http://127.0.0.1:9000".into());
        assert_eq!(field(c.base_url().unwrap_err()), "path_style");
        c.path_style = true;
        assert_eq!(
            c.base_url().unwrap().unwrap().as_str(),
            "http://127.0.0.1:9000/"
        );
        c.endpoint = None;
        assert!(c.base_url().unwrap().is_none());
        assert!(c.client().is_ok(), "AWS S3 in the region");
    }

    #[test]
    fn bad_values_name_their_field() {
        let with = |f: fn(&mut S3Config)| {
            let mut c = config();
            f(&mut c);
            field(c.client().unwrap_err())
        };
        assert_eq!(
            with(|c| c.endpoint = Some("s3.example.com".into())),
            "endpoint"
        );
        assert_eq!(
            with(|c| c.endpoint = Some("ftp://s3.example.com".into())),
            "endpoint"
        );
        assert_eq!(with(|c| c.bucket = " ".into()), "bucket");
        assert_eq!(with(|c| c.bucket = "a/b".into()), "bucket");
        assert_eq!(with(|c| c.access_key_id = String::new()), "access_key_id");
        assert_eq!(
            with(|c| c.secret_access_key = SecretString::from("")),
            "secret_access_key"
        );
        assert!(config().client().is_ok());
    }

    #[test]
    fn prefixes_are_folder_names() {
        let prefix = |p: &str| {
            let mut c = config();
            c.prefix = p.into();
            c.checked_prefix()
        };
        assert_eq!(prefix("").unwrap(), "");
        assert_eq!(prefix("/kqueen/backups/").unwrap(), "kqueen/backups");
        assert_eq!(prefix("prod-1.eu_west").unwrap(), "prod-1.eu_west");
        for bad in ["a//b", "a/../b", "./a", "a b", "a?b", "ä"] {
            assert_eq!(field(prefix(bad).unwrap_err()), "prefix", "{bad}");
        }
    }
}
