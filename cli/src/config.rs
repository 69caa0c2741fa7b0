//! Where the client keeps what `kqueen login` saved (the portal's URL and a personal API
//! token) and its cached cluster credentials. The file is JSON, readable by its owner only:
//! `$KQUEEN_CLIENT_CONFIG`, else `$XDG_CONFIG_HOME/kqueen/client.json`, else
//! `~/.config/kqueen/client.json`. `KQUEEN_URL` and `KQUEEN_TOKEN` override it (for CI jobs).

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};

/// What `kqueen login` saved. `Debug` never shows the token.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientConfig {
    /// The portal's URL, without a trailing slash.
    pub url: Option<String>,
    pub token: Option<String>,
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("url", &self.url)
            .field("has_token", &self.token.is_some())
            .finish()
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn home() -> Result<PathBuf> {
    env("HOME")
        .map(PathBuf::from)
        .ok_or_else(|| CliError::Local("HOME is not set".into()))
}

/// The client configuration file's path.
pub fn config_path() -> Result<PathBuf> {
    if let Some(p) = env("KQUEEN_CLIENT_CONFIG") {
        return Ok(PathBuf::from(p));
    }
    let base = match env("XDG_CONFIG_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => home()?.join(".config"),
    };
    Ok(base.join("kqueen").join("client.json"))
}

/// The directory of cached cluster credentials.
pub fn cache_dir() -> Result<PathBuf> {
    let base = match env("XDG_CACHE_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => home()?.join(".cache"),
    };
    Ok(base.join("kqueen").join("credentials"))
}

/// A portal URL as given by a person: `https://kqueen.example.com/` → without the slash;
/// only http and https.
pub fn normalize_url(url: &str) -> Result<String> {
    let url = url.trim().trim_end_matches('/');
    let ok = (url.starts_with("https://") || url.starts_with("http://"))
        && url.split("://").nth(1).is_some_and(|rest| !rest.is_empty())
        && !url.chars().any(char::is_whitespace);
    if !ok {
        return Err(CliError::Usage(format!(
            "{url:?} is not a portal URL: give it as https://host[:port]"
        )));
    }
    Ok(url.to_owned())
}

impl ClientConfig {
    /// The saved configuration (empty when there is none), with the environment's overrides.
    pub fn load() -> Result<Self> {
        let mut config = Self::load_file(&config_path()?)?;
        if let Some(url) = env("KQUEEN_URL") {
            config.url = Some(normalize_url(&url)?);
        }
        if let Some(token) = env("KQUEEN_TOKEN") {
            config.token = Some(token.trim().to_owned());
        }
        Ok(config)
    }

    fn load_file(path: &Path) -> Result<Self> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                CliError::Local(format!(
                    "{} is not a kqueen client configuration ({e}); remove it and log in again",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(CliError::local(
                &format!("cannot read {}", path.display()),
                e,
            )),
        }
    }

    /// Writes the file (created readable by its owner only).
    pub fn save(&self) -> Result<PathBuf> {
        let path = config_path()?;
        let json = serde_json::to_vec_pretty(self).map_err(|e| CliError::local("config", e))?;
        write_private(&path, &json)?;
        Ok(path)
    }

    /// The URL and token, or a message saying how to log in.
    pub fn credentials(&self) -> Result<(&str, &str)> {
        match (self.url.as_deref(), self.token.as_deref()) {
            (Some(url), Some(token)) if !token.is_empty() => Ok((url, token)),
            (Some(url), _) => Err(CliError::NotLoggedIn(format!(
                "not logged in to {url}: run `kqueen login {url}`"
            ))),
            _ => Err(CliError::NotLoggedIn(
                "not logged in: run `kqueen login https://<portal>`".into(),
            )),
        }
    }
}

/// Writes `bytes` to `path` atomically (a temporary file beside it, renamed), with mode 0600,
/// creating the directory (0700) if needed.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    // A symlinked file (dotfile managers) is updated where it really is, the link kept.
    let real = std::fs::canonicalize(path).ok();
    let path = real.as_deref().unwrap_or(path);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| CliError::local(&format!("cannot create {}", dir.display()), e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(CliError::local(
            &format!("cannot write {}", path.display()),
            e,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn urls_lose_their_trailing_slash_and_need_a_scheme() {
        assert_eq!(
            normalize_url(" https://kqueen.example.com/ ").unwrap(),
            "https://kqueen.example.com"
        );
        assert_eq!(
            normalize_url("http://127.0.0.1:8000").unwrap(),
            "http://127.0.0.1:8000"
        );
        for bad in ["kqueen.example.com", "ftp://x", "https://", "https://a b"] {
            assert!(normalize_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn private_files_are_owner_only_and_replace_the_old_one() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/client.json");
        write_private(&path, b"one").unwrap();
        write_private(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
        // Through a symlink: the target changes, the link stays.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        write_private(&link, b"three").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&path).unwrap(), b"three");
    }

    #[test]
    fn debug_hides_the_token() {
        let config = ClientConfig {
            url: Some("https://k".into()),
            token: Some("kq_secret".into()),
        };
        assert!(!format!("{config:?}").contains("kq_secret"));
    }

    #[test]
    fn missing_parts_say_how_to_log_in() {
        let none = ClientConfig::default().credentials().unwrap_err();
        assert!(none.to_string().contains("kqueen login"), "{none}");
        let url_only = ClientConfig {
            url: Some("https://k".into()),
            token: None,
        };
        let e = url_only.credentials().unwrap_err();
        assert!(e.to_string().contains("kqueen login https://k"), "{e}");
        assert_eq!(e.exit_code(), 3);
    }
}
