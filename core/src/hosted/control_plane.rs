//! How a hosted control plane's processes are started: the files they read (certificates and
//! keys written with mode 0600 into the cluster's own directory) and their command lines.
//!
//! kube-apiserver stores everything under its key space of the shared etcd
//! (`--etcd-prefix`), authenticates there with its client certificate (whose common name is
//! its etcd user), and never compacts (`--etcd-compaction-interval=0`): a user confined to a
//! prefix may not, so etcd compacts itself (`--auto-compaction-*`). kube-controller-manager
//! runs beside it so that namespaces are finalised, service-account tokens and the bootstrap
//! signer work, and kube-scheduler so that pods on the tenant's nodes are placed.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use super::etcd::KeySpace;
use super::pki::{self, CertKey, ControlPlanePki};
use crate::vault::Secret;

/// Where a control plane's API server listens and what it stores where.
#[derive(Debug, Clone)]
pub struct ControlPlaneSpec {
    pub etcd_endpoints: Vec<String>,
    pub key_space: KeySpace,
    /// The address it binds (`0.0.0.0` in a pod).
    pub bind_address: String,
    /// The address it advertises to the cluster's nodes (the endpoints of the tenant's
    /// `kubernetes` Service).
    pub advertise_address: String,
    pub port: u16,
    /// How the controller manager beside it reaches it.
    pub local_endpoint: String,
    /// The service range (its first address is in the serving certificate).
    pub service_cidr: String,
    /// The Kubernetes version the binaries are (major, minor): flags differ between them.
    pub version: (u32, u32),
    /// Whether controller managers and schedulers elect a leader (several run side by side).
    pub leader_elect: bool,
}

impl ControlPlaneSpec {
    /// A control plane run as processes on this host, on `address:port`.
    pub fn on_host(
        etcd_endpoints: Vec<String>,
        key_space: KeySpace,
        address: IpAddr,
        port: u16,
        version: (u32, u32),
    ) -> Self {
        Self {
            etcd_endpoints,
            key_space,
            bind_address: address.to_string(),
            advertise_address: address.to_string(),
            port,
            local_endpoint: endpoint(&address.to_string(), port),
            service_cidr: SERVICE_CIDR.into(),
            version,
            leader_elect: false,
        }
    }

    /// A control plane run as containers of a pod (of several side by side): the API server
    /// binds `port` on every address of the pod and advertises `advertise:port` (where the
    /// tenant's nodes reach it: the endpoints of its `kubernetes` Service); the controller
    /// manager beside it reaches it on loopback and elects a leader (during a rolling
    /// update two pods run even with one replica).
    pub fn in_pod(
        etcd_endpoints: Vec<String>,
        key_space: KeySpace,
        advertise: IpAddr,
        port: u16,
        version: (u32, u32),
    ) -> Self {
        Self {
            etcd_endpoints,
            key_space,
            bind_address: "0.0.0.0".into(),
            advertise_address: advertise.to_string(),
            port,
            local_endpoint: endpoint("127.0.0.1", port),
            service_cidr: SERVICE_CIDR.into(),
            version,
            leader_elect: true,
        }
    }
}

/// The tenant cluster's service range (its first address, 10.96.0.1, is in the serving
/// certificate).
pub const SERVICE_CIDR: &str = "10.96.0.0/12";

/// `https://<host>:<port>`, IPv6 addresses in brackets.
pub fn endpoint(host: &str, port: u16) -> String {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(a)) => format!("https://[{a}]:{port}"),
        _ => format!("https://{host}:{port}"),
    }
}

/// The files of one control plane, by what they are.
#[derive(Debug, Clone)]
pub struct ControlPlaneFiles {
    pub dir: PathBuf,
}

impl ControlPlaneFiles {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// The files of a control plane whose directory is `dir` on the machine that runs it
    /// (written there by someone else: a Secret volume).
    pub fn at(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// Every certificate and key, the etcd client credentials and the kubeconfigs of the
    /// controller manager and the scheduler, by file name.
    pub fn contents(
        pki: &ControlPlanePki,
        etcd_server_ca: &str,
        etcd_client: &CertKey,
        spec: &ControlPlaneSpec,
    ) -> Vec<(String, Secret)> {
        let pairs: [(&str, &CertKey); 6] = [
            ("ca", &pki.ca),
            ("apiserver", &pki.apiserver),
            ("apiserver-kubelet-client", &pki.apiserver_kubelet_client),
            ("front-proxy-ca", &pki.front_proxy_ca),
            ("front-proxy-client", &pki.front_proxy_client),
            ("etcd-client", etcd_client),
        ];
        let public = |text: &str| Secret::new(text.as_bytes().to_vec());
        let mut contents: Vec<(String, Secret)> = Vec::new();
        for (name, pair) in pairs {
            contents.push((format!("{name}.crt"), public(&pair.cert_pem)));
            contents.push((format!("{name}.key"), pair.key_pem.clone()));
        }
        contents.push(("sa.key".into(), pki.service_account_key.clone()));
        contents.push(("sa.pub".into(), public(&pki.service_account_pub)));
        contents.push(("etcd-ca.crt".into(), public(etcd_server_ca)));
        contents.push((
            "controller-manager.kubeconfig".into(),
            pki::kubeconfig(
                "hosted",
                &spec.local_endpoint,
                &pki.ca.cert_pem,
                &pki.controller_manager,
            ),
        ));
        contents.push((
            "scheduler.kubeconfig".into(),
            pki::kubeconfig(
                "hosted",
                &spec.local_endpoint,
                &pki.ca.cert_pem,
                &pki.scheduler,
            ),
        ));
        contents
    }

    /// Writes [`ControlPlaneFiles::contents`] into `dir` (created, mode 0700; files 0600).
    pub fn write(
        dir: &Path,
        pki: &ControlPlanePki,
        etcd_server_ca: &str,
        etcd_client: &CertKey,
        spec: &ControlPlaneSpec,
    ) -> std::io::Result<Self> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        for (name, body) in Self::contents(pki, etcd_server_ca, etcd_client, spec) {
            let path = dir.join(name);
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&path)?;
            // An existing file keeps its old mode through open(): set it.
            file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
            std::io::Write::write_all(&mut file, body.expose())?;
        }
        Ok(Self::at(dir))
    }

    /// kube-apiserver's command line (without the binary).
    pub fn apiserver_args(&self, spec: &ControlPlaneSpec) -> Vec<String> {
        let p = |name: &str| self.path(name);
        vec![
            format!("--etcd-servers={}", spec.etcd_endpoints.join(",")),
            format!("--etcd-prefix={}", spec.key_space.prefix()),
            format!("--etcd-cafile={}", p("etcd-ca.crt")),
            format!("--etcd-certfile={}", p("etcd-client.crt")),
            format!("--etcd-keyfile={}", p("etcd-client.key")),
            "--etcd-compaction-interval=0".into(),
            format!("--bind-address={}", spec.bind_address),
            format!("--advertise-address={}", spec.advertise_address),
            format!("--secure-port={}", spec.port),
            format!("--tls-cert-file={}", p("apiserver.crt")),
            format!("--tls-private-key-file={}", p("apiserver.key")),
            format!("--client-ca-file={}", p("ca.crt")),
            format!(
                "--kubelet-client-certificate={}",
                p("apiserver-kubelet-client.crt")
            ),
            format!("--kubelet-client-key={}", p("apiserver-kubelet-client.key")),
            format!("--requestheader-client-ca-file={}", p("front-proxy-ca.crt")),
            format!("--proxy-client-cert-file={}", p("front-proxy-client.crt")),
            format!("--proxy-client-key-file={}", p("front-proxy-client.key")),
            "--requestheader-allowed-names=front-proxy-client".into(),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            "--authorization-mode=Node,RBAC".into(),
            // Nodes may change only themselves and their pods (kubeadm sets it too).
            "--enable-admission-plugins=NodeRestriction".into(),
            "--enable-bootstrap-token-auth=true".into(),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", p("sa.pub")),
            format!("--service-account-signing-key-file={}", p("sa.key")),
            format!("--service-cluster-ip-range={}", spec.service_cidr),
            "--allow-privileged=true".into(),
        ]
    }

    /// kube-controller-manager's command line (without the binary).
    pub fn controller_manager_args(&self, spec: &ControlPlaneSpec) -> Vec<String> {
        let p = |name: &str| self.path(name);
        let mut args = vec![
            format!("--kubeconfig={}", p("controller-manager.kubeconfig")),
            format!(
                "--authentication-kubeconfig={}",
                p("controller-manager.kubeconfig")
            ),
            format!(
                "--authorization-kubeconfig={}",
                p("controller-manager.kubeconfig")
            ),
            format!("--service-account-private-key-file={}", p("sa.key")),
            format!("--root-ca-file={}", p("ca.crt")),
            format!("--cluster-signing-cert-file={}", p("ca.crt")),
            format!("--cluster-signing-key-file={}", p("ca.key")),
            "--use-service-account-credentials=true".into(),
            "--controllers=*,bootstrapsigner,tokencleaner".into(),
            // Its own HTTPS port (health, metrics) is not used: several control planes on
            // one host would collide on it.
            "--secure-port=0".into(),
            format!("--leader-elect={}", spec.leader_elect),
        ];
        if spec.version < (1, 24) {
            // Before 1.24 it also serves an insecure port (10252) by default.
            args.push("--port=0".into());
        }
        args
    }

    /// kube-scheduler's command line (without the binary).
    pub fn scheduler_args(&self, spec: &ControlPlaneSpec) -> Vec<String> {
        let kubeconfig = self.path("scheduler.kubeconfig");
        let mut args = vec![
            format!("--kubeconfig={kubeconfig}"),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            // Its HTTPS port (health, metrics) is not used: several schedulers on one host
            // would collide on it.
            "--secure-port=0".into(),
            format!("--leader-elect={}", spec.leader_elect),
        ];
        if spec.version < (1, 23) {
            // Before 1.23 it also serves an insecure port (10251) by default.
            args.push("--port=0".into());
        }
        args
    }
}
