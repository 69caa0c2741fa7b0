//! `login` (a personal token, or the device login of [`device_login`]), `logout`, `whoami`.

use std::io::{BufRead, IsTerminal};

use serde_json::Value;

use super::device_login;
use crate::api::Api;
use crate::args::LoginArgs;
use crate::config::{cache_dir, normalize_url, ClientConfig};
use crate::error::{CliError, Result};
use crate::output::{print_line, print_object, Column, Format};

fn read_token(from_stdin: bool) -> Result<String> {
    let token = if !from_stdin && std::io::stdin().is_terminal() {
        rpassword::prompt_password("Personal API token (the portal's Tokens page): ")
            .map_err(|e| CliError::local("cannot read the token", e))?
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| CliError::local("cannot read the token", e))?;
        line
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        return Err(CliError::Usage("no token given".into()));
    }
    Ok(token)
}

pub async fn login(args: LoginArgs) -> Result<()> {
    let url = normalize_url(&args.url)?;
    // A device login where asked for, or on a terminal when the portal offers one; a token
    // otherwise (scripts pipe theirs in).
    let device = args.sso || (!args.token_stdin && std::io::stdin().is_terminal());
    let anonymous = Api::anonymous(&url)?;
    let started = if device {
        device_login::start(&anonymous).await?
    } else {
        None
    };
    let (token, name) = match started {
        Some(started) => {
            let done = device_login::finish(&anonymous, started, args.days).await?;
            (done.token, done.username)
        }
        None if args.sso => {
            return Err(CliError::NotFound(format!(
                "{url} offers no single sign-on from a terminal; use a personal API token"
            )))
        }
        None => {
            let token = read_token(args.token_stdin)?;
            let me: Value = Api::new(&url, &token)?.get("/api/v1/whoami").await?;
            let name = me.get("username").and_then(Value::as_str).unwrap_or("?");
            (token, name.to_owned())
        }
    };
    let mut config = ClientConfig::load()?;
    // A new login starts without the previous one's cached cluster credentials.
    let _ = std::fs::remove_dir_all(cache_dir()?);
    config.url = Some(url.clone());
    config.token = Some(token);
    let path = config.save()?;
    print_line(&format!(
        "Logged in to {url} as {name} (saved in {}).",
        path.display()
    ))
}

pub fn logout() -> Result<()> {
    let mut config = ClientConfig::load()?;
    config.token = None;
    config.save()?;
    match std::fs::remove_dir_all(cache_dir()?) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(CliError::local("cannot remove cached credentials", e))
        }
        _ => {}
    }
    print_line("Logged out; cached cluster credentials removed.")
}

pub async fn whoami(format: Format) -> Result<()> {
    let api = Api::from_config(&ClientConfig::load()?)?;
    let mut me: Value = api.get("/api/v1/whoami").await?;
    if let Value::Object(map) = &mut me {
        map.insert("portal".into(), Value::String(api.url().to_owned()));
    }
    print_object(
        format,
        &me,
        &[
            Column("portal", "portal"),
            Column("username", "username"),
            Column("name", "display_name"),
            Column("email", "email"),
            Column("operator", "operator"),
            Column("tenants", "tenants"),
        ],
    )
}
