//! A fake Jenkins for the `jenkins` provisioner's tests: the remote-API endpoints KQueen uses,
//! in memory, served under `/jenkins/` on 127.0.0.1 port 0 (or another address of the
//! test's own, such as the node lab's bridge where pods reach it). Queue items and builds advance
//! when they are polled, not with time, so tests need no sleeps: a queue item starts its build
//! after `queue_polls` polls, a build reveals its console a slice per poll and ends after
//! `build_polls` polls. As Jenkins does, a trigger with the same parameters as an item still
//! in the queue is folded into it (the same queue item answers).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use base64::Engine as _;
use serde_json::json;

pub const USER: &str = "kqueen-bot";
pub const TOKEN: &str = "11f0a9c2d4e6b8a0c2e4f6a8b0c2d4e6f8";
const CRUMB: &str = "5f2c0b6a9e";
const SESSION: &str = "JSESSIONID.fake=node0abc";

/// How builds of a job behave.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// Polls of the queue item before its build starts.
    pub queue_polls: u32,
    /// Polls of the build before it ends.
    pub build_polls: u32,
    pub result: &'static str,
    /// The queue item is cancelled (by someone in Jenkins) at its first poll.
    pub cancel_in_queue: bool,
    pub console: String,
    pub artifacts: BTreeMap<String, Vec<u8>>,
    pub estimated_ms: i64,
}

impl JobSpec {
    pub fn new(result: &'static str, console: &str) -> Self {
        Self {
            queue_polls: 3,
            build_polls: 4,
            result,
            cancel_in_queue: false,
            console: console.into(),
            artifacts: BTreeMap::new(),
            estimated_ms: 10_000,
        }
    }

    pub fn artifact(mut self, path: &str, content: &[u8]) -> Self {
        self.artifacts.insert(path.into(), content.to_vec());
        self
    }
}

/// A received `buildWithParameters`.
#[derive(Clone, Debug)]
pub struct Trigger {
    pub job: String,
    pub params: BTreeMap<String, String>,
    pub queue_id: u64,
}

#[derive(Debug)]
pub struct QueueEntry {
    pub job: String,
    pub polls: u32,
    pub cancelled: bool,
    pub build: Option<u64>,
}

#[derive(Debug)]
pub struct Build {
    pub queue_id: u64,
    pub polls: u32,
    pub building: bool,
    pub result: Option<String>,
    pub stop_requested: bool,
    /// Bytes of the console written so far.
    pub revealed: usize,
    pub started_ms: i64,
}

#[derive(Debug, Default)]
pub struct FakeState {
    /// `http://127.0.0.1:<port>/jenkins/`.
    pub url: String,
    pub jobs: BTreeMap<String, JobSpec>,
    pub queue: BTreeMap<u64, QueueEntry>,
    pub builds: BTreeMap<(String, u64), Build>,
    pub triggers: Vec<Trigger>,
    pub cancels: Vec<u64>,
    pub stops: Vec<(String, u64)>,
    /// "METHOD /path" of every request, in order.
    pub requests: Vec<String>,
    /// The next this many requests are answered 503.
    pub fail_next: u32,
    /// POSTs need a crumb from /crumbIssuer (and its session cookie).
    pub require_crumb: bool,
    /// Queue items answer 404 once they have left the queue.
    pub forget_left_items: bool,
    next_queue_id: u64,
}

pub struct FakeJenkins {
    pub url: String,
    state: Arc<Mutex<FakeState>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeJenkins {
    pub async fn start() -> Self {
        Self::start_on("127.0.0.1").await
    }

    /// Listens on `address` (an address of the test's own), any port.
    pub async fn start_on(address: &str) -> Self {
        let listener = tokio::net::TcpListener::bind((address, 0)).await.unwrap();
        let url = format!("http://{}/jenkins/", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(FakeState {
            url: url.clone(),
            next_queue_id: 1,
            ..FakeState::default()
        }));
        let app = Router::new().fallback(handle).with_state(state.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, state, task }
    }

    pub fn state(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap()
    }

    pub fn add_job(&self, name: &str, spec: JobSpec) {
        self.state().jobs.insert(name.into(), spec);
    }

    pub fn triggers(&self) -> Vec<Trigger> {
        self.state().triggers.clone()
    }
}

impl Drop for FakeJenkins {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Shared = Arc<Mutex<FakeState>>;

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Decoded `a=1&b=2` pairs (form bodies and query strings).
fn pairs(encoded: &str) -> BTreeMap<String, String> {
    reqwest::Url::parse(&format!("http://x/?{encoded}"))
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn authorized(headers: &HeaderMap) -> bool {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{TOKEN}"))
    );
    headers
        .get(header::AUTHORIZATION)
        .is_some_and(|v| v.as_bytes() == expected.as_bytes())
}

fn crumb_ok(headers: &HeaderMap) -> bool {
    let crumb = headers
        .get("jenkins-crumb")
        .is_some_and(|v| v.as_bytes() == CRUMB.as_bytes());
    let session = headers
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.contains(SESSION));
    crumb && session
}

fn json_response(value: serde_json::Value) -> Response {
    axum::Json(value).into_response()
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found").into_response()
}

fn redirect(to: String) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

async fn handle(
    State(state): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut s = state.lock().unwrap();
    s.requests.push(format!("{method} {}", uri.path()));
    if s.fail_next > 0 {
        s.fail_next -= 1;
        return (StatusCode::SERVICE_UNAVAILABLE, "Jenkins is restarting").into_response();
    }
    if !authorized(&headers) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Basic realm=\"Jenkins\"")],
            "Invalid password/token for user",
        )
            .into_response();
    }
    if method == Method::POST && s.require_crumb && !crumb_ok(&headers) {
        return (
            StatusCode::FORBIDDEN,
            "<html><body><h2>HTTP ERROR 403 No valid crumb was included in the request</h2>",
        )
            .into_response();
    }
    let Some(path) = uri.path().strip_prefix("/jenkins/") else {
        return not_found();
    };
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let query = pairs(uri.query().unwrap_or(""));
    match (&method, segments.as_slice()) {
        (&Method::GET, ["crumbIssuer", "api", "json"]) if s.require_crumb => (
            [(header::SET_COOKIE, format!("{SESSION}; Path=/; HttpOnly"))],
            axum::Json(json!({
                "_class": "hudson.security.csrf.DefaultCrumbIssuer",
                "crumb": CRUMB,
                "crumbRequestField": "Jenkins-Crumb",
            })),
        )
            .into_response(),
        (&Method::GET, ["queue", "item", id, "api", "json"]) => {
            queue_item(&mut s, id.parse().unwrap_or(0))
        }
        (&Method::POST, ["queue", "cancelItem"]) => {
            let id: u64 = query.get("id").and_then(|v| v.parse().ok()).unwrap_or(0);
            if let Some(entry) = s.queue.get_mut(&id) {
                if entry.build.is_none() {
                    entry.cancelled = true;
                }
            }
            s.cancels.push(id);
            let to = format!("{}queue/", s.url);
            redirect(to)
        }
        (_, ["job", ..]) => {
            let mut job = Vec::new();
            let mut rest = segments.as_slice();
            while let ["job", name, tail @ ..] = rest {
                job.push(*name);
                rest = tail;
            }
            let job = job.join("/");
            if !s.jobs.contains_key(&job) {
                return not_found();
            }
            job_route(&mut s, &method, &job, rest, &query, &body)
        }
        _ => not_found(),
    }
}

fn queue_item(s: &mut FakeState, id: u64) -> Response {
    let url = s.url.clone();
    let Some(entry) = s.queue.get_mut(&id) else {
        return not_found();
    };
    entry.polls += 1;
    let spec = s.jobs[&entry.job].clone();
    if !entry.cancelled && entry.build.is_none() {
        if spec.cancel_in_queue {
            entry.cancelled = true;
        } else if entry.polls > spec.queue_polls {
            let number = 1 + s.builds.keys().filter(|(j, _)| *j == entry.job).count() as u64;
            entry.build = Some(number);
            s.builds.insert(
                (entry.job.clone(), number),
                Build {
                    queue_id: id,
                    polls: 0,
                    building: true,
                    result: None,
                    stop_requested: false,
                    revealed: 0,
                    // Half of the estimate has passed already: progress is visible at once.
                    started_ms: now_ms() - spec.estimated_ms / 2,
                },
            );
        }
    }
    let entry = &s.queue[&id];
    if s.forget_left_items && (entry.cancelled || entry.build.is_some()) {
        return not_found();
    }
    let job_url = job_url(&url, &entry.job);
    if entry.cancelled {
        json_response(json!({
            "_class": "hudson.model.Queue$LeftItem",
            "id": id,
            "cancelled": true,
            "executable": null,
        }))
    } else if let Some(n) = entry.build {
        json_response(json!({
            "_class": "hudson.model.Queue$LeftItem",
            "id": id,
            "cancelled": false,
            "executable": {
                "_class": "hudson.model.FreeStyleBuild",
                "number": n,
                "url": format!("{job_url}{n}/"),
            },
        }))
    } else {
        // A countdown, then a reason that stays.
        let why = match entry.polls {
            1 => "In the quiet period. Expires in 4.9 sec".to_owned(),
            2 => "In the quiet period. Expires in 0.7 sec".to_owned(),
            _ => "Waiting for next available executor".to_owned(),
        };
        json_response(json!({
            "_class": "hudson.model.Queue$WaitingItem",
            "id": id,
            "blocked": false,
            "buildable": false,
            "why": why,
        }))
    }
}

fn job_url(base: &str, job: &str) -> String {
    let mut url = base.to_owned();
    for name in job.split('/') {
        url.push_str(&format!("job/{name}/"));
    }
    url
}

fn job_route(
    s: &mut FakeState,
    method: &Method,
    job: &str,
    rest: &[&str],
    query: &BTreeMap<String, String>,
    body: &Bytes,
) -> Response {
    let spec = s.jobs[job].clone();
    let job_url = job_url(&s.url, job);
    match (method, rest) {
        (&Method::POST, ["buildWithParameters"]) => {
            let params = pairs(std::str::from_utf8(body).unwrap_or(""));
            // Jenkins folds a trigger into a queued item of the job with the same parameters.
            let queued = s.triggers.iter().find(|t| {
                t.job == job
                    && t.params == params
                    && s.queue
                        .get(&t.queue_id)
                        .is_some_and(|q| !q.cancelled && q.build.is_none())
            });
            let id = match queued {
                Some(t) => t.queue_id,
                None => {
                    let id = s.next_queue_id;
                    s.next_queue_id += 1;
                    s.queue.insert(
                        id,
                        QueueEntry {
                            job: job.into(),
                            polls: 0,
                            cancelled: false,
                            build: None,
                        },
                    );
                    id
                }
            };
            s.triggers.push(Trigger {
                job: job.into(),
                params,
                queue_id: id,
            });
            (
                StatusCode::CREATED,
                [(header::LOCATION, format!("{}queue/item/{id}/", s.url))],
            )
                .into_response()
        }
        (&Method::GET, ["api", "json"]) => {
            let builds: Vec<_> = s
                .builds
                .iter()
                .rev()
                .filter(|((j, _), _)| j == job)
                .map(|((_, n), b)| json!({"number": n, "queueId": b.queue_id}))
                .collect();
            json_response(json!({"_class": "hudson.model.FreeStyleProject", "builds": builds}))
        }
        (_, [number, tail @ ..]) => {
            let Ok(number) = number.parse::<u64>() else {
                return not_found();
            };
            if method == Method::POST && tail == ["stop"] {
                s.stops.push((job.to_owned(), number));
            }
            let Some(build) = s.builds.get_mut(&(job.to_owned(), number)) else {
                return not_found();
            };
            build_route(build, &spec, method, number, &job_url, tail, query)
        }
        _ => not_found(),
    }
}

fn build_route(
    build: &mut Build,
    spec: &JobSpec,
    method: &Method,
    number: u64,
    job_url: &str,
    tail: &[&str],
    query: &BTreeMap<String, String>,
) -> Response {
    let console = spec.console.as_bytes();
    match (method, tail) {
        (&Method::GET, ["api", "json"]) => {
            build.polls += 1;
            if build.building {
                if build.stop_requested {
                    build.building = false;
                    build.result = Some("ABORTED".into());
                } else if build.polls >= spec.build_polls {
                    build.building = false;
                    build.result = Some(spec.result.into());
                    build.revealed = console.len();
                } else {
                    let slice = console.len() / spec.build_polls as usize + 1;
                    build.revealed = (slice * build.polls as usize).min(console.len());
                }
            }
            json_response(json!({
                "_class": "hudson.model.FreeStyleBuild",
                "number": number,
                "url": format!("{job_url}{number}/"),
                "building": build.building,
                "result": build.result,
                "timestamp": build.started_ms,
                "estimatedDuration": spec.estimated_ms,
                "queueId": build.queue_id,
            }))
        }
        (&Method::GET, ["logText", "progressiveText"]) => {
            let start: usize = query.get("start").and_then(|v| v.parse().ok()).unwrap_or(0);
            let text = console[start.min(build.revealed)..build.revealed].to_vec();
            let mut headers = vec![(
                header::HeaderName::from_static("x-text-size"),
                build.revealed.to_string(),
            )];
            if build.building {
                headers.push((
                    header::HeaderName::from_static("x-more-data"),
                    "true".to_owned(),
                ));
            }
            let mut response = text.into_response();
            for (name, value) in headers {
                response.headers_mut().insert(name, value.parse().unwrap());
            }
            response
        }
        (&Method::GET, ["artifact", path @ ..]) => match spec.artifacts.get(&path.join("/")) {
            Some(content) if !build.building => content.clone().into_response(),
            _ => not_found(),
        },
        (&Method::POST, ["stop"]) => {
            build.stop_requested = true;
            redirect(format!("{job_url}{number}/"))
        }
        _ => not_found(),
    }
}
