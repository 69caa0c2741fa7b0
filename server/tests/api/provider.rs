//! The test OpenID Provider (end2end/oidc/provider.mjs, npm oidc-provider), started per test,
//! and a headless browser that walks its login and consent pages.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use reqwest::StatusCode;

pub struct Provider {
    pub issuer: String,
    child: Child,
}

impl Provider {
    pub fn start() -> Provider {
        Self::start_with(&[])
    }

    /// A provider with more of its settings (`OIDC_*` variables, end2end/oidc/README.md).
    pub fn start_with(env: &[(&str, &str)]) -> Provider {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let script = root.join("end2end/oidc/provider.mjs");
        assert!(
            root.join("end2end/node_modules/oidc-provider").is_dir(),
            "end2end/node_modules is missing: run `scripts/setup.sh test` (or `cd end2end && npm ci`)"
        );
        let mut child = Command::new("node")
            .arg(&script)
            .env("OIDC_PORT", "0")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the test OpenID provider");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).expect("provider prints its issuer");
        Provider {
            issuer: v["issuer"].as_str().unwrap().to_owned(),
            child,
        }
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// A cookie-keeping client that follows no redirects (like a browser driven by hand).
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(crate::helpers::REQUEST_TIMEOUT)
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn absolute(base: &str, location: &str) -> String {
    url::Url::parse(base)
        .unwrap()
        .join(location)
        .unwrap()
        .to_string()
}

fn location(res: &reqwest::Response) -> String {
    absolute(
        res.url().as_str(),
        res.headers()["location"].to_str().unwrap(),
    )
}

/// Posts the provider's login form at `page`; `Err` holds the login page shown again when the
/// password is refused.
async fn sign_in(
    client: &reqwest::Client,
    page: &str,
    user: &str,
    password: &str,
) -> Result<reqwest::Response, String> {
    let action = absolute(page, &format!("{}/login", page.trim_end_matches('/')));
    let r = client
        .post(action)
        .form(&[("login", user), ("password", password)])
        .send()
        .await
        .unwrap();
    if r.status() == StatusCode::OK {
        return Err(r.text().await.unwrap());
    }
    Ok(r)
}

/// Starting at `url`, follows redirects and fills the provider's login (as `user`, with
/// `password`) and consent pages, until a redirect leaves for a URL starting with `stop_at`.
/// Returns that URL. Panics if the provider shows a page it does not expect; returns the
/// login page's HTML in `Err` when the password is refused.
pub async fn walk(
    client: &reqwest::Client,
    url: &str,
    user: &str,
    password: &str,
    stop_at: &str,
) -> Result<String, String> {
    let mut url = url.to_owned();
    for _ in 0..20 {
        if url.starts_with(stop_at) {
            return Ok(url);
        }
        let res = client.get(&url).send().await.unwrap();
        if res.status().is_redirection() {
            url = location(&res);
            continue;
        }
        assert_eq!(res.status(), StatusCode::OK, "{url}");
        let page = res.url().to_string();
        let html = res.text().await.unwrap();
        let res = if html.contains(r#"name="password""#) {
            sign_in(client, &page, user, password).await?
        } else if html.contains("/confirm") {
            client
                .post(format!("{}/confirm", page.trim_end_matches('/')))
                .send()
                .await
                .unwrap()
        } else {
            panic!("unexpected provider page at {page}: {html}");
        };
        assert!(res.status().is_redirection(), "{}", res.status());
        url = location(&res);
    }
    panic!("too many redirects");
}

/// The hidden inputs and the action of the first form on `html` (the provider's pages escape
/// `&`, `<`, `>`, `"` and `'` in values).
fn hidden_form(html: &str) -> (String, Vec<(String, String)>) {
    let attr = |tag: &str, name: &str| {
        let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
        let len = tag[start..].find('"')?;
        Some(
            tag[start..start + len]
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&"),
        )
    };
    let form = &html[html.find("<form").expect("a form")..];
    let action = attr(&form[..form.find('>').unwrap()], "action").expect("an action");
    let inputs = form
        .split("<input")
        .skip(1)
        .map(|tag| &tag[..tag.find('>').unwrap_or(tag.len())])
        .filter(|tag| tag.contains(r#"type="hidden""#))
        .filter_map(|tag| Some((attr(tag, "name")?, attr(tag, "value").unwrap_or_default())))
        .collect();
    (action, inputs)
}

/// How a person answers a device login's page.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Device<'a> {
    /// Opens the page with the code in it and confirms.
    Confirm,
    /// Opens the bare page and types `code`, then confirms.
    Type(&'a str),
    /// Opens the page with the code in it and aborts.
    Abort,
}

/// Walks the provider's device login from `url` (a verification URI) as `user`: the code page,
/// the confirmation, login and consent, until the success page. `Err` holds the page it ended
/// on when that is not the success page.
pub async fn walk_device(
    client: &reqwest::Client,
    url: &str,
    user: &str,
    password: &str,
    how: Device<'_>,
) -> Result<(), String> {
    let mut res = client.get(url).send().await.unwrap();
    for _ in 0..20 {
        if res.status().is_redirection() {
            let next = location(&res);
            res = client.get(&next).send().await.unwrap();
            continue;
        }
        let page = res.url().to_string();
        let html = res.text().await.unwrap();
        if html.contains(r#"id="device-success""#) {
            return Ok(());
        }
        res = if html.contains(r#"name="password""#) {
            sign_in(client, &page, user, password).await?
        } else if html.contains("/interaction/") && html.contains("/confirm") {
            client
                .post(format!("{}/confirm", page.trim_end_matches('/')))
                .send()
                .await
                .unwrap()
        } else if html.contains(r#"name="xsrf""#) {
            // The code page (typed, or posted for us), then its confirmation.
            let (action, mut inputs) = hidden_form(&html);
            if html.contains(r#"name="user_code""#)
                && !html.contains(r#"type="hidden" name="user_code""#)
            {
                let Device::Type(code) = how else {
                    return Err(html);
                };
                inputs.push(("user_code".into(), code.into()));
            }
            if html.contains(r#"id="user-code""#) && how == Device::Abort {
                inputs.push(("abort".into(), "yes".into()));
            }
            client
                .post(absolute(&page, &action))
                .form(&inputs)
                .send()
                .await
                .unwrap()
        } else {
            return Err(html);
        };
    }
    panic!("too many pages");
}
