//! KQueen with the `hosted` provisioner over a TLS etcd (and the `command` one, for installers
//! a test plays), as the hosted-cluster tests and the
//! nodes benchmark start it: a fresh SQLite database, people logged in through the test
//! identity provider, hosted providers offered on that etcd, clusters requested.

use std::sync::Arc;
use std::time::Duration;

use kqueen_core::cluster::ClusterRequest;
use kqueen_core::engine::EngineConfig;
use kqueen_core::identity::GroupMap;
use kqueen_core::provisioner::command::{CommandOptions, CommandProvisioner};
use kqueen_core::provisioner::hosted::{HostedOptions, HostedProvisioner};
use kqueen_core::provisioner::Registry;
use kqueen_core::{Actor, Kqueen};

use crate::process::KillOnDrop;
use crate::tls_etcd::TlsEtcd;
use crate::TestDatabase;

pub struct HostedKqueen {
    pub k: Kqueen,
    /// The operator (command line).
    pub ops: Actor,
    pub etcd: TlsEtcd,
    /// Holds the clusters' working folders (`clusters/<id>`).
    pub work: tempfile::TempDir,
    _db: TestDatabase,
}

impl HostedKqueen {
    /// KQueen over `etcd` whose identity provider's groups map to tenant roles as `groups`
    /// says (`team-a=team-a:member,…`).
    pub async fn start(etcd: TlsEtcd, groups: &str) -> Self {
        let db = TestDatabase::sqlite();
        let mut registry = Registry::new();
        registry.register(Arc::new(HostedProvisioner::new(HostedOptions::default())));
        registry.register(Arc::new(CommandProvisioner::new(CommandOptions::default())));
        let k = Kqueen::new(Arc::new(db.connect().await))
            .with_registry(registry)
            .with_group_map(GroupMap::parse(groups).expect("a group map"));
        Self {
            k,
            ops: Actor::cli(Some("ops".into())),
            etcd,
            work: tempfile::tempdir().expect("a work folder"),
            _db: db,
        }
    }

    /// `subject`, logged in with `group`.
    pub async fn person(&self, subject: &str, group: &str) -> Actor {
        crate::people::login(&self.k, subject, group).await
    }

    /// Offers hosted provider `provider` on this etcd, its other settings `settings`, with
    /// template `template` (`overrides` as JSON, or empty).
    pub async fn offer(
        &self,
        provider: &str,
        settings: &[(&str, &str)],
        (template, overrides): (&str, &str),
    ) {
        let mut all = self.etcd.provider_settings();
        all.extend(settings.iter().map(|(k, v)| (*k, (*v).to_owned())));
        let all: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
        crate::catalog::offer(
            &self.k,
            &self.ops,
            ("hosted", provider, &all),
            (template, overrides),
        )
        .await;
    }

    /// Offers provider `provider` of runtime `kubernetes` on the admin cluster
    /// `admin_kubeconfig` (the node lab's: NodePort Services on 127.0.0.1, two replicas,
    /// `versions` as `Binaries::import_images` gives them), with template `template`.
    pub async fn offer_kubernetes_runtime(
        &self,
        provider: &str,
        versions: &str,
        admin_kubeconfig: &str,
        template: &str,
    ) {
        let settings = [
            ("runtime", "kubernetes"),
            ("versions", versions),
            ("address", "127.0.0.1"),
            ("admin_kubeconfig", admin_kubeconfig),
            ("service_type", "NodePort"),
            ("replicas", "2"),
        ];
        self.offer(provider, &settings, (template, "")).await;
    }

    /// `who` requests cluster `name` in `tenant` from `template`, at Kubernetes `version`
    /// when given; its id.
    pub async fn request(
        &self,
        who: &Actor,
        (tenant, name, template): (&str, &str, &str),
        version: Option<&str>,
    ) -> String {
        let parameters = version
            .map(|v| [("kubernetes_version".to_owned(), v.to_owned())].into())
            .unwrap_or_default();
        let (cluster, _) = self
            .k
            .clusters()
            .request_cluster(
                who,
                ClusterRequest {
                    tenant: Some(tenant.into()),
                    name: name.into(),
                    template: template.into(),
                    parameters,
                },
            )
            .await
            .expect("request the cluster");
        cluster.id.to_string()
    }

    /// An engine configuration over the work folder, polling every 50 ms.
    pub fn engine_config(&self) -> EngineConfig {
        let mut config = EngineConfig::new(self.work.path().join("clusters"));
        config.poll_interval = Duration::from_millis(50);
        config
    }

    /// Kills, when dropped, the processes the `process` runtime started for cluster `id`
    /// (they outlive KQueen on purpose).
    pub fn processes_of(&self, id: &str) -> KillOnDrop {
        KillOnDrop(self.work.path().join("clusters").join(id).join("run"))
    }

    /// The admin kubeconfig of cluster `id`, as text.
    pub async fn admin_kubeconfig(&self, id: &str) -> String {
        let yaml = self
            .k
            .access()
            .admin_kubeconfig(&self.ops, id)
            .await
            .expect("the admin kubeconfig");
        String::from_utf8(yaml.yaml.expose().to_vec()).expect("a UTF-8 kubeconfig")
    }
}
