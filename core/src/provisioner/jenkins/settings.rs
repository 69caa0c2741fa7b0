//! A provider's settings, checked: Jenkins' URL, the job's path, the artifact, CA certificates.

use std::fmt;
use std::time::Duration;

use reqwest::{Certificate, Url};

use crate::provisioner::jenkins::{DEFAULT_ARTIFACT, DEFAULT_POLL_SECONDS, MAX_POLL_SECONDS};
use crate::provisioner::Params;

/// A provider's settings, checked.
pub(super) struct Settings {
    /// Ends with '/'.
    pub(super) base: Url,
    pub(super) job: JobPath,
    pub(super) username: String,
    pub(super) artifact: Vec<String>,
    pub(super) delete_job: Option<JobPath>,
    pub(super) poll: Duration,
    pub(super) ca_cert: Option<String>,
}

impl Settings {
    /// Errors are `field: message`, as the schema's.
    pub(super) fn parse(config: &Params) -> Result<Self, String> {
        let field = |name: &str| config.get(name).map(|s| s.trim()).filter(|s| !s.is_empty());
        let required = |name: &str| field(name).ok_or_else(|| format!("{name}: is required"));
        let base = parse_base_url(required("url")?).map_err(|m| format!("url: {m}"))?;
        let job = JobPath::parse(required("job")?).map_err(|m| format!("job: {m}"))?;
        let username = required("username")?.to_owned();
        if username.contains(':') {
            return Err("username: must not contain ':'".into());
        }
        let artifact = parse_artifact(field("kubeconfig_artifact").unwrap_or(DEFAULT_ARTIFACT))
            .map_err(|m| format!("kubeconfig_artifact: {m}"))?;
        let delete_job = field("delete_job")
            .map(JobPath::parse)
            .transpose()
            .map_err(|m| format!("delete_job: {m}"))?;
        let poll = match field("poll_seconds") {
            None => DEFAULT_POLL_SECONDS,
            Some(s) => s
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=MAX_POLL_SECONDS).contains(n))
                .ok_or_else(|| {
                    format!("poll_seconds: must be a whole number from 1 to {MAX_POLL_SECONDS}")
                })?,
        };
        let ca_cert = field("ca_cert").map(str::to_owned);
        if let Some(pem) = &ca_cert {
            certificates(pem).map_err(|m| format!("ca_cert: {m}"))?;
        }
        Ok(Self {
            base,
            job,
            username,
            artifact,
            delete_job,
            poll: Duration::from_secs(poll),
            ca_cert,
        })
    }
}

pub(super) fn parse_base_url(s: &str) -> Result<Url, String> {
    let mut url = Url::parse(s).map_err(|_| "must be an http:// or https:// URL".to_owned())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("must be an http:// or https:// URL".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not contain credentials (use username and api_token)".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("must not have a query or a fragment".into());
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// Path segments with nothing that could climb out of where they are put.
pub(super) fn segments(s: &str, what: &str) -> Result<Vec<String>, String> {
    let s = s.trim().trim_matches('/');
    if s.is_empty() {
        return Err(format!("must name a {what}"));
    }
    s.split('/')
        .map(|seg| {
            if seg.is_empty() || seg == "." || seg == ".." || seg.chars().any(char::is_control) {
                Err(format!("'{seg}' is not a valid {what} path element"))
            } else {
                Ok(seg.to_owned())
            }
        })
        .collect()
}

pub(super) fn parse_artifact(s: &str) -> Result<Vec<String>, String> {
    if s.trim().starts_with('/') {
        return Err("must be relative to the build's artifacts".into());
    }
    segments(s, "file")
}

pub(super) fn certificates(pem: &str) -> Result<Vec<Certificate>, String> {
    let certs = Certificate::from_pem_bundle(pem.as_bytes())
        .map_err(|_| "is not a PEM certificate bundle".to_owned())?;
    if certs.is_empty() {
        return Err("contains no PEM certificate".into());
    }
    Ok(certs)
}

/// A job's full name: its folders and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct JobPath(Vec<String>);

impl JobPath {
    pub(super) fn parse(s: &str) -> Result<Self, String> {
        segments(s, "job").map(Self)
    }

    /// `base/job/a/job/b/<tail…>`.
    pub(super) fn url(&self, base: &Url, tail: &[&str]) -> Url {
        endpoint(
            base,
            self.0
                .iter()
                .flat_map(|name| ["job", name.as_str()])
                .chain(tail.iter().copied()),
        )
    }
}

impl fmt::Display for JobPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("/"))
    }
}

/// `base` with `segments` appended (each percent-encoded as needed).
pub(super) fn endpoint<'a>(base: &Url, segments: impl IntoIterator<Item = &'a str>) -> Url {
    let mut url = base.clone();
    // Only http(s) URLs with a host get here, and those always have path segments.
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
    url
}
