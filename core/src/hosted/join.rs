//! What a worker node needs to join a hosted cluster with `kubeadm join`: a bootstrap token
//! (a Secret in `kube-system`, with an expiry), the RBAC and ConfigMaps kubeadm's own
//! control plane would have written (the `cluster-info` ConfigMap in `kube-public`, signed
//! by the controller manager's bootstrap signer; `kubeadm-config` and the kubelet's
//! configuration), and the command line with the CA's public key hash.
//!
//! Objects are written with server-side apply (field manager `kqueen`), so preparing again
//! changes nothing. A token with at least [`REUSE_WHEN_LEFT`] of life left is handed out
//! again instead of minting one per request.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The group kubeadm's default node token puts joining nodes in.
pub const BOOTSTRAP_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";
/// A token with less life than this left is not handed out again.
pub const REUSE_WHEN_LEFT: Duration = Duration::from_secs(3600);
const MANAGER: &str = "kqueen";
/// The ClusterRole (and its binding) kubeadm's join reads nodes with.
const GET_NODES: &str = "kubeadm:get-nodes";
const TOKEN_LABEL: &str = "kqueen.io/join-token";

/// What the cluster page and `/api/v1/clusters/{id}/join` show. `Debug` leaves out the
/// token's secret (and the command that holds it).
#[derive(Clone, PartialEq, Eq)]
pub struct JoinInfo {
    /// `host:port` of the API server, as `kubeadm join` takes it.
    pub endpoint: String,
    /// `<id>.<secret>`: lets a machine join as a node until it expires.
    pub token: String,
    pub token_id: String,
    pub expires_at: DateTime<Utc>,
    /// `sha256:<hex>` of the cluster CA's public key.
    pub ca_cert_hash: String,
    /// The whole command for the node.
    pub command: String,
}

impl std::fmt::Debug for JoinInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinInfo")
            .field("endpoint", &self.endpoint)
            .field("token_id", &self.token_id)
            .field("expires_at", &self.expires_at)
            .field("ca_cert_hash", &self.ca_cert_hash)
            .finish_non_exhaustive()
    }
}

/// `<id>` and `<secret>` as bootstrap tokens have them: 6 and 16 of `[a-z0-9]`.
fn token_shaped(id: &str, secret: &str) -> bool {
    let ok = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    ok(id, 6) && ok(secret, 16)
}

#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("{0}")]
    Invalid(String),
    #[error("the cluster's API server: {0}")]
    Kube(#[from] kube::Error),
}

/// `sha256:<hex>` of the SubjectPublicKeyInfo of the CA certificate (PEM), as kubeadm's
/// `--discovery-token-ca-cert-hash` wants it.
pub fn ca_cert_hash(ca_pem: &str) -> Result<String, JoinError> {
    let invalid = || JoinError::Invalid("the cluster CA is not a PEM certificate".into());
    let (_, pem) = x509_parser::pem::parse_x509_pem(ca_pem.as_bytes()).map_err(|_| invalid())?;
    let cert = pem.parse_x509().map_err(|_| invalid())?;
    let spki = cert.tbs_certificate.subject_pki.raw;
    let digest = Sha256::digest(spki);
    Ok(format!(
        "sha256:{}",
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

/// A fresh `<id>.<secret>` (6 and 16 of `[a-z0-9]`), from the system's random source
/// (bytes past the last whole multiple of 36 are skipped: no character is likelier).
fn new_token() -> (String, String) {
    use argon2::password_hash::rand_core::{OsRng, RngCore};
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut chars = std::iter::repeat_with(|| OsRng.next_u32().to_le_bytes())
        .flatten()
        .filter(|b| usize::from(*b) < 252)
        .map(|b| CHARS[usize::from(b) % 36] as char);
    let id: String = chars.by_ref().take(6).collect();
    let secret: String = chars.take(16).collect();
    (id, secret)
}

fn apply() -> PatchParams {
    PatchParams::apply(MANAGER).force()
}

/// The kubeadm configuration API a node's kubeadm of this version reads: v1beta2 until
/// 1.21, v1beta3 from 1.22 (v1beta2 is gone in 1.26), v1beta4 from 1.31.
fn kubeadm_api(version: (u32, u32)) -> &'static str {
    match version {
        v if v < (1, 22) => "kubeadm.k8s.io/v1beta2",
        v if v < (1, 31) => "kubeadm.k8s.io/v1beta3",
        _ => "kubeadm.k8s.io/v1beta4",
    }
}

/// Where kubeadm of this version reads the kubelet's configuration: `kubelet-config-1.N`
/// before 1.24, `kubelet-config` since (both are written from 1.24 to 1.25, when either
/// may be read).
fn kubelet_maps((major, minor): (u32, u32)) -> Vec<String> {
    let versioned = format!("kubelet-config-{major}.{minor}");
    match (major, minor) {
        v if v < (1, 24) => vec![versioned],
        v if v < (1, 26) => vec!["kubelet-config".into(), versioned],
        _ => vec!["kubelet-config".into()],
    }
}

/// Writes what `kubeadm join` reads and hands out a bootstrap token valid for `ttl`.
/// `server` is the API server URL (`https://host:port`), `ca_pem` the cluster CA.
pub async fn prepare(
    client: kube::Client,
    server: &str,
    ca_pem: &str,
    version: (u32, u32),
    ttl: Duration,
) -> Result<JoinInfo, JoinError> {
    let endpoint = server
        .strip_prefix("https://")
        .ok_or_else(|| JoinError::Invalid(format!("'{server}' is not an https:// URL")))?
        .trim_end_matches('/')
        .to_owned();
    let hash = ca_cert_hash(ca_pem)?;
    write_cluster_objects(&client, server, ca_pem, version).await?;
    let (token_id, secret, expires_at) = token(&client, ttl).await?;
    let token = format!("{token_id}.{secret}");
    Ok(JoinInfo {
        command: format!(
            "kubeadm join {endpoint} --token {token} --discovery-token-ca-cert-hash {hash}"
        ),
        endpoint,
        token,
        token_id,
        expires_at,
        ca_cert_hash: hash,
    })
}

/// Revokes a join token (its Secret). Whether there was one.
pub async fn revoke(client: kube::Client, token_id: &str) -> Result<bool, JoinError> {
    if !token_shaped(token_id, "0000000000000000") {
        return Err(JoinError::Invalid(format!(
            "'{token_id}' is not a token id (6 of a-z and 0-9)"
        )));
    }
    let api = Api::<Secret>::namespaced(client, "kube-system");
    match api
        .delete(
            &format!("bootstrap-token-{token_id}"),
            &DeleteParams::default(),
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// A token of KQueen's with enough life left, or a new one.
async fn token(
    client: &kube::Client,
    ttl: Duration,
) -> Result<(String, String, DateTime<Utc>), JoinError> {
    let api = Api::<Secret>::namespaced(client.clone(), "kube-system");
    let now = crate::clock::now();
    let reuse_after = now + chrono::Duration::from_std(REUSE_WHEN_LEFT).unwrap_or_default();
    let existing = api
        .list(&ListParams::default().labels(&format!("{TOKEN_LABEL}=true")))
        .await?;
    for s in existing.items {
        let data = s.data.unwrap_or_default();
        let text = |k: &str| {
            data.get(k)
                .and_then(|v| String::from_utf8(v.0.clone()).ok())
        };
        let expires = text("expiration").and_then(|e| DateTime::parse_from_rfc3339(&e).ok());
        if let (Some(id), Some(secret), Some(expires)) =
            (text("token-id"), text("token-secret"), expires)
        {
            // Whoever may write Secrets in kube-system could have labelled one: only a
            // well-formed token under its own name goes into a command run as root.
            let named = s.metadata.name.as_deref() == Some(&format!("bootstrap-token-{id}"));
            if named && token_shaped(&id, &secret) && expires > reuse_after {
                return Ok((id, secret, expires.with_timezone(&Utc)));
            }
        }
    }
    let (id, secret) = new_token();
    let expires = now + chrono::Duration::from_std(ttl).unwrap_or_default();
    let expiration = expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let body = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": format!("bootstrap-token-{id}"),
            "namespace": "kube-system",
            "labels": {TOKEN_LABEL: "true"},
        },
        "type": "bootstrap.kubernetes.io/token",
        "stringData": {
            "description": "A node join token issued by KQueen",
            "token-id": id,
            "token-secret": secret,
            "expiration": expiration,
            "usage-bootstrap-authentication": "true",
            "usage-bootstrap-signing": "true",
            "auth-extra-groups": BOOTSTRAP_GROUP,
        },
    });
    api.patch(
        &format!("bootstrap-token-{id}"),
        &apply(),
        &Patch::Apply(&body),
    )
    .await?;
    Ok((id, secret, expires))
}

async fn write_cluster_objects(
    client: &kube::Client,
    server: &str,
    ca_pem: &str,
    (major, minor): (u32, u32),
) -> Result<(), JoinError> {
    use base64::Engine;
    let ca_data = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    let cluster_info = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    \
         certificate-authority-data: {ca_data}\n    server: {server}\ncontexts: []\n\
         current-context: \"\"\npreferences: {{}}\nusers: []\n"
    );
    let mut maps: BTreeMap<(&str, String), serde_json::Value> = BTreeMap::new();
    maps.insert(
        ("kube-public", "cluster-info".into()),
        json!({"kubeconfig": cluster_info}),
    );
    maps.insert(
        ("kube-system", "kubeadm-config".into()),
        json!({"ClusterConfiguration": format!(
            "apiVersion: {}\nkind: ClusterConfiguration\n\
             kubernetesVersion: v{major}.{minor}.0\ncontrolPlaneEndpoint: {}\n\
             networking:\n  serviceSubnet: 10.96.0.0/12\n  dnsDomain: cluster.local\n",
            kubeadm_api((major, minor)),
            server.trim_start_matches("https://")
        )}),
    );
    let kubelet_maps = kubelet_maps((major, minor));
    for map in &kubelet_maps {
        maps.insert(
            ("kube-system", map.clone()),
            json!({"kubelet": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
                 authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: true\n  \
                 x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\nauthorization:\n  mode: Webhook\n\
                 cgroupDriver: systemd\nclusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n\
                 rotateCertificates: true\n"}),
        );
    }
    for ((namespace, name), data) in &maps {
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        });
        Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .patch(name, &apply(), &Patch::Apply(&body))
            .await?;
    }
    // Who may read what during a join (as kubeadm's init writes it). kubeadm (1.18 on)
    // looks for a Ready node of the joining name before it starts the kubelet.
    let get_nodes = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": GET_NODES},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
    });
    Api::<ClusterRole>::all(client.clone())
        .patch(GET_NODES, &apply(), &Patch::Apply(&get_nodes))
        .await?;
    let cluster_bindings = [
        (GET_NODES, GET_NODES, BOOTSTRAP_GROUP),
        (
            "kubeadm:kubelet-bootstrap",
            "system:node-bootstrapper",
            BOOTSTRAP_GROUP,
        ),
        (
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            BOOTSTRAP_GROUP,
        ),
        (
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            "system:nodes",
        ),
    ];
    for (name, role, group) in cluster_bindings {
        let body = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        });
        Api::<ClusterRoleBinding>::all(client.clone())
            .patch(name, &apply(), &Patch::Apply(&body))
            .await?;
    }
    let roles = [
        (
            "kube-public",
            "kubeadm:bootstrap-signer-clusterinfo",
            vec!["cluster-info".to_owned()],
            json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"}]),
        ),
        (
            "kube-system",
            "kubeadm:nodes-kubeadm-config",
            vec!["kubeadm-config".to_owned()],
            json!([
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": BOOTSTRAP_GROUP},
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"},
            ]),
        ),
        (
            "kube-system",
            "kubeadm:kubelet-config",
            kubelet_maps,
            json!([
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": BOOTSTRAP_GROUP},
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"},
            ]),
        ),
    ];
    for (namespace, name, maps, subjects) in roles {
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
                       "resourceNames": maps}],
        });
        Api::<Role>::namespaced(client.clone(), namespace)
            .patch(name, &apply(), &Patch::Apply(&role))
            .await?;
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": subjects,
        });
        Api::<RoleBinding>::namespaced(client.clone(), namespace)
            .patch(name, &apply(), &Patch::Apply(&binding))
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{kubeadm_api, kubelet_maps, token_shaped};

    #[test]
    fn the_formats_follow_the_nodes_kubeadm() {
        assert_eq!(kubeadm_api((1, 20)), "kubeadm.k8s.io/v1beta2");
        assert_eq!(kubeadm_api((1, 22)), "kubeadm.k8s.io/v1beta3");
        assert_eq!(kubeadm_api((1, 30)), "kubeadm.k8s.io/v1beta3");
        assert_eq!(kubeadm_api((1, 33)), "kubeadm.k8s.io/v1beta4");
        assert_eq!(kubelet_maps((1, 20)), ["kubelet-config-1.20"]);
        assert_eq!(
            kubelet_maps((1, 24)),
            ["kubelet-config", "kubelet-config-1.24"]
        );
        assert_eq!(kubelet_maps((1, 33)), ["kubelet-config"]);
    }

    #[test]
    fn tokens_are_six_and_sixteen_lowercase_letters_and_digits() {
        assert!(token_shaped("abc123", "0123456789abcdef"));
        for (id, secret) in [
            ("abc12", "0123456789abcdef"),
            ("ABC123", "0123456789abcdef"),
            ("abc123", "0123456789abcde"),
            ("abc123", "0123456789abcd;f"),
            ("abc123", "$(reboot)0123456"),
        ] {
            assert!(!token_shaped(id, secret), "{id}.{secret}");
        }
        let (id, secret) = super::new_token();
        assert!(token_shaped(&id, &secret), "{id}.{secret}");
    }
}
