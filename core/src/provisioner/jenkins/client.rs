//! An authenticated HTTP client of one Jenkins: triggering, queue items, builds, the
//! progressive console, artifacts, CSRF crumbs.

use std::sync::Arc;

use reqwest::cookie::Jar;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION};
use reqwest::{redirect, Client, Response, StatusCode, Url};
use serde::de::DeserializeOwned;

use super::endpoint;
use crate::provisioner::jenkins::{
    certificates, BuildJson, Console, CrumbJson, JenkinsOptions, JobJson, JobPath, QueueItemJson,
    QueueState, Run, Settings, MAX_ARTIFACT_BYTES, TOKEN,
};
use crate::provisioner::ProvisionError;
use crate::vault::Secret;

/// An authenticated client of one Jenkins for one provisioner call.
pub(super) struct Jenkins {
    /// Follows redirects (artifacts may be served from elsewhere; reqwest drops the
    /// credentials when a redirect leaves the host).
    pub(super) get: Client,
    /// Does not: Jenkins answers actions with a redirect to a page nobody needs.
    pub(super) post: Client,
    pub(super) base: Url,
    pub(super) username: String,
    pub(super) token: String,
    /// A CSRF crumb, once Jenkins has asked for one (it is bound to the session cookie,
    /// which the two clients share).
    pub(super) crumb: Option<(HeaderName, HeaderValue)>,
}

impl Jenkins {
    pub(super) fn connect(
        options: &JenkinsOptions,
        settings: &Settings,
        token: &Secret,
    ) -> Result<Self, ProvisionError> {
        let token = std::str::from_utf8(token.expose())
            .map(str::trim)
            .ok()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ProvisionError::Failed(format!(
                    "provider secret '{TOKEN}' is not a valid API token"
                ))
            })?
            .to_owned();
        let jar = Arc::new(Jar::default());
        let certs = match &settings.ca_cert {
            Some(pem) => certificates(pem).map_err(|m| {
                ProvisionError::Failed(format!("the Jenkins provider's ca_cert {m}"))
            })?,
            None => Vec::new(),
        };
        let client = |policy: redirect::Policy| {
            let mut builder = Client::builder()
                .use_rustls_tls()
                .user_agent(concat!("kqueen/", env!("CARGO_PKG_VERSION")))
                .timeout(options.request_timeout)
                .connect_timeout(options.connect_timeout)
                .cookie_provider(jar.clone())
                .redirect(policy);
            for cert in &certs {
                builder = builder.add_root_certificate(cert.clone());
            }
            builder.build().map_err(|e| {
                ProvisionError::Failed(format!("cannot set up an HTTP client for Jenkins: {e}"))
            })
        };
        Ok(Self {
            get: client(redirect::Policy::limited(5))?,
            post: client(redirect::Policy::none())?,
            base: settings.base.clone(),
            username: settings.username.clone(),
            token,
            crumb: None,
        })
    }

    pub(super) fn build_url(&self, job: &JobPath, number: u64) -> Url {
        job.url(&self.base, &[&number.to_string(), ""])
    }

    pub(super) fn queue_url(&self, id: u64) -> Url {
        endpoint(&self.base, ["queue", "item", &id.to_string(), ""])
    }

    /// `None` on 404; errors for other failures.
    pub(super) async fn get(
        &self,
        url: Url,
        what: &str,
    ) -> Result<Option<Response>, ProvisionError> {
        let resp = self
            .get
            .get(url)
            .basic_auth(&self.username, Some(&self.token))
            .send()
            .await
            .map_err(|e| unreachable(e, what))?;
        self.check(resp, what)
    }

    pub(super) async fn get_json<T: DeserializeOwned>(
        &self,
        url: Url,
        what: &str,
    ) -> Result<Option<T>, ProvisionError> {
        match self.get(url, what).await? {
            Some(resp) => json(resp, what).await.map(Some),
            None => Ok(None),
        }
    }

    /// A form POST; `None` on 404. Fetches a CSRF crumb and tries again if Jenkins asks.
    pub(super) async fn post(
        &mut self,
        url: Url,
        form: &[(String, String)],
        what: &str,
    ) -> Result<Option<Response>, ProvisionError> {
        let resp = self.send_post(url.clone(), form, what).await?;
        if resp.status() != StatusCode::FORBIDDEN || self.crumb.is_some() {
            return self.check(resp, what);
        }
        let body = resp.text().await.unwrap_or_default();
        if !body.to_ascii_lowercase().contains("crumb") {
            return Err(self.refusal(StatusCode::FORBIDDEN, what));
        }
        tracing::debug!("Jenkins asks for a CSRF crumb");
        self.crumb = Some(self.fetch_crumb().await?);
        let resp = self.send_post(url, form, what).await?;
        self.check(resp, what)
    }

    pub(super) async fn send_post(
        &self,
        url: Url,
        form: &[(String, String)],
        what: &str,
    ) -> Result<Response, ProvisionError> {
        let mut request = self
            .post
            .post(url)
            .basic_auth(&self.username, Some(&self.token))
            .form(form);
        if let Some((name, value)) = &self.crumb {
            request = request.header(name.clone(), value.clone());
        }
        request.send().await.map_err(|e| unreachable(e, what))
    }

    pub(super) fn check(
        &self,
        resp: Response,
        what: &str,
    ) -> Result<Option<Response>, ProvisionError> {
        let status = resp.status();
        if status.is_success() || status.is_redirection() {
            Ok(Some(resp))
        } else if status == StatusCode::NOT_FOUND {
            Ok(None)
        } else {
            Err(self.refusal(status, what))
        }
    }

    pub(super) fn refusal(&self, status: StatusCode, what: &str) -> ProvisionError {
        match status {
            StatusCode::UNAUTHORIZED => ProvisionError::Failed(format!(
                "Jenkins refused the credentials of user '{}' ({status} on {what}): check the \
                 user name and API token",
                self.username
            )),
            StatusCode::FORBIDDEN => ProvisionError::Failed(format!(
                "Jenkins refused the credentials of user '{}' ({status} on {what}): a wrong API \
                 token, or the user lacks the permission",
                self.username
            )),
            s if s.is_server_error()
                || s == StatusCode::TOO_MANY_REQUESTS
                || s == StatusCode::REQUEST_TIMEOUT =>
            {
                ProvisionError::Transient(format!("Jenkins answered {status} on {what}"))
            }
            _ => ProvisionError::Failed(format!("Jenkins answered {status} on {what}")),
        }
    }

    pub(super) async fn fetch_crumb(&self) -> Result<(HeaderName, HeaderValue), ProvisionError> {
        let what = "the CSRF crumb";
        let url = endpoint(&self.base, ["crumbIssuer", "api", "json"]);
        let crumb: CrumbJson = self.get_json(url, what).await?.ok_or_else(|| {
            ProvisionError::Failed("Jenkins asks for a CSRF crumb but has no crumb issuer".into())
        })?;
        let bad = || ProvisionError::Failed("Jenkins sent an unusable CSRF crumb".into());
        let name =
            HeaderName::from_bytes(crumb.crumb_request_field.as_bytes()).map_err(|_| bad())?;
        let mut value = HeaderValue::from_str(&crumb.crumb).map_err(|_| bad())?;
        value.set_sensitive(true);
        Ok((name, value))
    }

    /// Queues a build of `job`.
    pub(super) async fn trigger(
        &mut self,
        job: &JobPath,
        params: &[(String, String)],
    ) -> Result<Run, ProvisionError> {
        let what = format!("the trigger of job '{job}'");
        let url = job.url(&self.base, &["buildWithParameters"]);
        let resp = self.post(url, params, &what).await?.ok_or_else(|| {
            ProvisionError::Failed(format!(
                "Jenkins has no job '{job}' ({})",
                job.url(&self.base, &[""])
            ))
        })?;
        let id = queue_id(resp.headers()).ok_or_else(|| {
            ProvisionError::Failed(format!(
                "Jenkins accepted {what} ({}) but named no queue item in its answer",
                resp.status()
            ))
        })?;
        tracing::info!(job = %job, queue_id = id, "Jenkins build queued");
        Ok(Run {
            job: job.to_string(),
            queue_id: id,
            queue_url: self.queue_url(id).to_string(),
            ..Run::default()
        })
    }

    pub(super) async fn queue_item(&self, id: u64) -> Result<QueueState, ProvisionError> {
        let what = format!("queue item {id}");
        let url = endpoint(&self.queue_url(id), ["api", "json"]);
        let Some(item) = self.get_json::<QueueItemJson>(url, &what).await? else {
            return Ok(QueueState::Gone);
        };
        Ok(if let Some(executable) = item.executable {
            QueueState::Started(executable.number)
        } else if item.cancelled == Some(true) {
            QueueState::Cancelled
        } else {
            QueueState::Waiting(item.why)
        })
    }

    /// The build of `job` that came from queue item `id`, among its recent builds.
    pub(super) async fn build_from_queue(
        &self,
        job: &JobPath,
        id: u64,
    ) -> Result<Option<u64>, ProvisionError> {
        let what = format!("the builds of job '{job}'");
        let mut url = job.url(&self.base, &["api", "json"]);
        url.query_pairs_mut()
            .append_pair("tree", "builds[number,queueId]{0,100}");
        let info: JobJson = self.get_json(url, &what).await?.ok_or_else(|| {
            ProvisionError::Failed(format!("Jenkins has no job '{job}' any more"))
        })?;
        Ok(info
            .builds
            .iter()
            .find(|b| b.queue_id == Some(id))
            .map(|b| b.number))
    }

    pub(super) async fn build_info(
        &self,
        build_url: &Url,
        what: &str,
    ) -> Result<Option<BuildJson>, ProvisionError> {
        let mut url = endpoint(build_url, ["api", "json"]);
        url.query_pairs_mut()
            .append_pair("tree", "number,building,result,timestamp,estimatedDuration");
        self.get_json(url, what).await
    }

    pub(super) async fn console(
        &self,
        build_url: &Url,
        start: u64,
        what: &str,
    ) -> Result<Console, ProvisionError> {
        let mut url = endpoint(build_url, ["logText", "progressiveText"]);
        url.query_pairs_mut()
            .append_pair("start", &start.to_string());
        let what = format!("the console of {what}");
        let Some(resp) = self.get(url, &what).await? else {
            return Ok(Console {
                text: Vec::new(),
                next: start,
                more: false,
            });
        };
        let size = header(resp.headers(), "x-text-size").and_then(|v| v.parse::<u64>().ok());
        let more =
            header(resp.headers(), "x-more-data").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let text = resp
            .bytes()
            .await
            .map_err(|e| unreachable(e, &what))?
            .to_vec();
        let next = size.unwrap_or(start + text.len() as u64);
        Ok(Console { text, next, more })
    }

    /// A file, at most [`MAX_ARTIFACT_BYTES`]; `None` on 404.
    pub(super) async fn download(
        &self,
        url: Url,
        what: &str,
    ) -> Result<Option<Vec<u8>>, ProvisionError> {
        let Some(mut resp) = self.get(url, what).await? else {
            return Ok(None);
        };
        let too_big = || ProvisionError::Failed(format!("the {what} is too big for a kubeconfig"));
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_ARTIFACT_BYTES as u64)
        {
            return Err(too_big());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| unreachable(e, what))? {
            if bytes.len() + chunk.len() > MAX_ARTIFACT_BYTES {
                return Err(too_big());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Some(bytes))
    }

    pub(super) async fn cancel_queue_item(&mut self, id: u64) -> Result<(), ProvisionError> {
        let mut url = endpoint(&self.base, ["queue", "cancelItem"]);
        url.query_pairs_mut().append_pair("id", &id.to_string());
        // 404: the item left the queue meanwhile; the next poll sees where it went.
        self.post(url, &[], &format!("the cancellation of queue item {id}"))
            .await
            .map(drop)
    }

    pub(super) async fn stop(&mut self, build_url: &Url, what: &str) -> Result<(), ProvisionError> {
        let url = endpoint(build_url, ["stop"]);
        self.post(url, &[], &format!("the stop of {what}"))
            .await
            .map(drop)
    }
}

/// The id of the queue item in a `Location` like `https://ci/queue/item/42/`.
pub(super) fn queue_id(headers: &HeaderMap) -> Option<u64> {
    let location = headers.get(LOCATION)?.to_str().ok()?;
    let (_, rest) = location.split_once("queue/item/")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

pub(super) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()
}

pub(super) async fn json<T: DeserializeOwned>(
    resp: Response,
    what: &str,
) -> Result<T, ProvisionError> {
    let body = resp.bytes().await.map_err(|e| unreachable(e, what))?;
    serde_json::from_slice(&body).map_err(|_| {
        ProvisionError::Failed(format!(
            "Jenkins answered {what} with something other than its JSON API (is the URL that of \
             Jenkins?)"
        ))
    })
}

/// A transport failure (refused, reset, timed out, TLS): worth retrying.
pub(super) fn unreachable(e: reqwest::Error, what: &str) -> ProvisionError {
    let mut causes = String::new();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        causes.push_str(": ");
        causes.push_str(&cause.to_string());
        source = cause.source();
    }
    let message = if e.is_timeout() {
        "timed out".to_owned()
    } else {
        e.without_url().to_string()
    };
    ProvisionError::Transient(format!(
        "cannot reach Jenkins for {what}: {message}{causes}"
    ))
}
