//! Putting a cluster's context into a kubeconfig file: the entries are added (or replaced,
//! by name) without touching anything else in the file, and the file is rewritten atomically
//! and readable by its owner only.

use std::path::{Path, PathBuf};

use kqueen_dto::credentials::Credential;
use serde_json::{json, Map, Value};

use crate::error::{CliError, Result};

/// The credential plugin API kubectl is asked to speak with `kqueen get-token`
/// (client-go ≥ 1.22 speaks it; `get-token` answers in whichever version kubectl asks for).
pub const EXEC_API_VERSION: &str = "client.authentication.k8s.io/v1";

/// A context with its cluster and user entries, all called `name`.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub name: String,
    /// The `cluster:` mapping (server, CA…).
    pub cluster: Value,
    /// The `user:` mapping (token, or `exec`).
    pub user: Value,
}

/// The kubeconfig to update: `file`, else the first file of `$KUBECONFIG`, else
/// `~/.kube/config`.
pub fn target_path(file: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(f) = file {
        return Ok(f);
    }
    if let Some(first) = std::env::var_os("KUBECONFIG")
        .and_then(|v| std::env::split_paths(&v).find(|p| !p.as_os_str().is_empty()))
    {
        return Ok(first);
    }
    let home = std::env::var_os("HOME").ok_or_else(|| CliError::Local("HOME is not set".into()))?;
    Ok(Path::new(&home).join(".kube").join("config"))
}

fn parse(yaml: &str, what: &str) -> Result<Value> {
    if yaml.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let value: Value = serde_saphyr::from_str(yaml)
        .map_err(|e| CliError::Local(format!("{what} is not a readable kubeconfig: {e}")))?;
    match value {
        Value::Object(_) => Ok(value),
        Value::Null => Ok(Value::Object(Map::new())),
        _ => Err(CliError::Local(format!(
            "{what} is not a kubeconfig mapping"
        ))),
    }
}

fn named<'a>(doc: &'a Value, list: &str, name: &str, field: &str) -> Option<&'a Value> {
    doc.get(list)?
        .as_array()?
        .iter()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
        .get(field)
}

/// The current context's cluster and user of a downloaded kubeconfig, renamed `name`.
pub fn entry_from_download(yaml: &str, name: &str) -> Result<Entry> {
    let doc = parse(yaml, "the downloaded kubeconfig")?;
    let unusable = || CliError::Server("the downloaded kubeconfig has no usable context".into());
    let current = doc
        .get("current-context")
        .and_then(Value::as_str)
        .ok_or_else(unusable)?;
    let context = named(&doc, "contexts", current, "context").ok_or_else(unusable)?;
    let cluster_name = context
        .get("cluster")
        .and_then(Value::as_str)
        .ok_or_else(unusable)?;
    let user_name = context
        .get("user")
        .and_then(Value::as_str)
        .ok_or_else(unusable)?;
    Ok(Entry {
        name: name.to_owned(),
        cluster: named(&doc, "clusters", cluster_name, "cluster")
            .cloned()
            .ok_or_else(unusable)?,
        user: named(&doc, "users", user_name, "user")
            .cloned()
            .ok_or_else(unusable)?,
    })
}

/// The cluster entry of a credential (where the API server is and how to trust it).
pub fn cluster_of(credential: &Credential) -> Value {
    let mut cluster = Map::new();
    cluster.insert("server".into(), json!(credential.server));
    if let Some(ca) = &credential.certificate_authority_data {
        cluster.insert("certificate-authority-data".into(), json!(ca));
    }
    if let Some(name) = &credential.tls_server_name {
        cluster.insert("tls-server-name".into(), json!(name));
    }
    if credential.insecure_skip_tls_verify {
        cluster.insert("insecure-skip-tls-verify".into(), json!(true));
    }
    if let Some(proxy) = &credential.proxy_url {
        cluster.insert("proxy-url".into(), json!(proxy));
    }
    Value::Object(cluster)
}

/// A context whose user runs `command get-token` for the credential's cluster.
pub fn exec_entry(credential: &Credential, command: &Path, url: &str) -> Entry {
    Entry {
        name: credential.context.clone(),
        cluster: cluster_of(credential),
        user: json!({
            "exec": {
                "apiVersion": EXEC_API_VERSION,
                "command": command.to_string_lossy(),
                "args": ["get-token", "--cluster", credential.cluster, "--url", url],
                "interactiveMode": "Never",
                "provideClusterInfo": false,
            }
        }),
    }
}

fn upsert(doc: &mut Map<String, Value>, list: &str, name: &str, field: &str, value: Value) {
    let entry = json!({ "name": name, field: value });
    let items = doc.entry(list).or_insert_with(|| Value::Array(Vec::new()));
    if !items.is_array() {
        *items = Value::Array(Vec::new());
    }
    if let Value::Array(items) = items {
        match items
            .iter_mut()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
        {
            Some(existing) => *existing = entry,
            None => items.push(entry),
        }
    }
}

/// `existing` (a kubeconfig file's text, maybe empty) with `entry` added or replaced; the
/// current context becomes the entry's when `switch`.
pub fn merge(existing: &str, entry: &Entry, switch: bool, what: &str) -> Result<Value> {
    let mut doc = match parse(existing, what)? {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    doc.entry("apiVersion").or_insert_with(|| json!("v1"));
    doc.entry("kind").or_insert_with(|| json!("Config"));
    upsert(
        &mut doc,
        "clusters",
        &entry.name,
        "cluster",
        entry.cluster.clone(),
    );
    upsert(&mut doc, "users", &entry.name, "user", entry.user.clone());
    // A context's other settings (a namespace the user chose) are kept.
    let mut context = named(
        &Value::Object(doc.clone()),
        "contexts",
        &entry.name,
        "context",
    )
    .and_then(Value::as_object)
    .cloned()
    .unwrap_or_default();
    context.insert("cluster".into(), json!(entry.name));
    context.insert("user".into(), json!(entry.name));
    upsert(
        &mut doc,
        "contexts",
        &entry.name,
        "context",
        Value::Object(context),
    );
    if switch
        || doc
            .get("current-context")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        doc.insert("current-context".into(), json!(entry.name));
    }
    Ok(Value::Object(doc))
}

pub fn to_yaml(doc: &Value) -> Result<String> {
    serde_saphyr::to_string(doc).map_err(|e| CliError::local("cannot write the kubeconfig", e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const DOWNLOAD: &str = "apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster: {server: 'https://127.0.0.1:6443', certificate-authority-data: Q0E=}
users:
- name: kubernetes-admin
  user: {token: t0k3n}
contexts:
- name: admin@kubernetes
  context: {cluster: kubernetes, user: kubernetes-admin}
current-context: admin@kubernetes
";

    fn credential() -> Credential {
        Credential {
            cluster: "0195f0a2-7c3e-7d4a-9b1e-3f2a1c0d9e8f".into(),
            context: "team-a-prod".into(),
            server: "https://127.0.0.1:6443".into(),
            certificate_authority_data: Some("Q0E=".into()),
            tls_server_name: Some("kubernetes".into()),
            insecure_skip_tls_verify: false,
            proxy_url: None,
            token: Some("t".into()),
            client_certificate_data: None,
            client_key_data: None,
            expires_at: "2026-01-01T00:00:00Z".into(),
            identity: "ServiceAccount kqueen-users/amy".into(),
        }
    }

    #[test]
    fn a_download_is_taken_by_its_current_context_and_renamed() {
        let entry = entry_from_download(DOWNLOAD, "team-a-prod").unwrap();
        assert_eq!(entry.name, "team-a-prod");
        assert_eq!(entry.cluster["server"], "https://127.0.0.1:6443");
        assert_eq!(entry.user["token"], "t0k3n");
        assert!(entry_from_download("kind: Config", "x").is_err());
    }

    #[test]
    fn merging_keeps_other_entries_and_replaces_same_names() {
        let existing = "apiVersion: v1
kind: Config
preferences: {colors: true}
clusters:
- {name: other, cluster: {server: 'https://other:6443'}}
- {name: team-a-prod, cluster: {server: 'https://old:6443'}}
users:
- {name: other, user: {token: keep-me}}
contexts:
- {name: other, context: {cluster: other, user: other}}
- {name: team-a-prod, context: {cluster: old, user: old, namespace: web}}
current-context: other
";
        let entry = exec_entry(&credential(), Path::new("/usr/bin/kqueen"), "https://kq");
        let doc = merge(existing, &entry, false, "f").unwrap();
        assert_eq!(doc["current-context"], "other");
        assert_eq!(doc["preferences"]["colors"], true);
        let clusters = doc["clusters"].as_array().unwrap();
        assert_eq!(clusters.len(), 2);
        assert_eq!(clusters[1]["cluster"]["server"], "https://127.0.0.1:6443");
        assert_eq!(clusters[1]["cluster"]["tls-server-name"], "kubernetes");
        assert_eq!(doc["users"][0]["user"]["token"], "keep-me");
        let exec = &doc["users"][1]["user"]["exec"];
        assert_eq!(exec["apiVersion"], EXEC_API_VERSION);
        assert_eq!(exec["command"], "/usr/bin/kqueen");
        assert_eq!(
            exec["args"],
            json!([
                "get-token",
                "--cluster",
                credential().cluster,
                "--url",
                "https://kq"
            ])
        );
        assert_eq!(
            doc["contexts"][1]["context"],
            json!({"cluster": "team-a-prod", "user": "team-a-prod", "namespace": "web"})
        );
        let switched = merge(existing, &entry, true, "f").unwrap();
        assert_eq!(switched["current-context"], "team-a-prod");
        // Written and read back, the document is the same.
        let again = parse(&to_yaml(&switched).unwrap(), "x").unwrap();
        assert_eq!(again, switched);
    }

    #[test]
    fn an_empty_file_becomes_a_whole_kubeconfig() {
        let entry = entry_from_download(DOWNLOAD, "team-a-prod").unwrap();
        let doc = merge("", &entry, false, "f").unwrap();
        assert_eq!(doc["kind"], "Config");
        assert_eq!(doc["current-context"], "team-a-prod");
        assert_eq!(doc["contexts"][0]["context"]["user"], "team-a-prod");
        assert!(merge("- a list", &entry, false, "f").is_err());
    }
}
