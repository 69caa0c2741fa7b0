//! Backups over /api/v1 against a real kube-apiserver (v1.20.2, imported as a cluster through
//! the API, the engine of the test server taking the backups): a cluster holding a CRD and
//! one of its objects, RBAC, a ConfigMap, a Secret, a Service, a Deployment and a claim is
//! backed up without and with Secrets; the archive holds each object where a person looks
//! for it, cleaned of status and what the server wrote, never a Secret; Secrets asked for are
//! sealed in the vault; what was left out says why; members get 403, other tenants 404,
//! anonymous callers 401; every download is audited. A backup is then restored into a second,
//! empty API server after a plan (namespaces chosen, definitions first), whose objects then
//! equal the backup's, Secrets included. A deleted cluster's backup stays: found by tenant,
//! restored by id into another cluster, deleted by hand. Backups asking for volume snapshots
//! create a VolumeSnapshot of the claim once the cluster serves the snapshot API, and say why
//! not before.

use std::time::Duration;

use kqueen_core::audit::AuditQuery;
use kqueen_core::backup::archive::read_archive;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::ApiResource;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, wait_for_state};
use crate::real_cluster::{message, world, World};
use kqueen_testkit::apiserver::RealApiServer;

/// Creates `object` (its kind served as `resource`) in the real cluster, behind KQueen's back.
async fn create(client: &kube::Client, resource: &ApiResource, object: Value) {
    let obj: DynamicObject = serde_json::from_value(object).unwrap();
    let api: Api<DynamicObject> = match obj.metadata.namespace.as_deref() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    api.create(&PostParams::default(), &obj).await.unwrap();
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The shop: a namespace with a ConfigMap, a Secret, a Service, a Deployment, a claim, a Role
/// and its binding, and a CronTab (a custom resource whose CRD is created first).
async fn furnish(w: &World) {
    let c = w.admin_client().await;
    create(
        &c,
        &resource(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "cronSpec": {"type": "string"}}}}}}}]}}),
    )
    .await;
    let ns = |kind: &str, name: &str, rest: Value| {
        let mut o = json!({"kind": kind, "metadata": {"name": name, "namespace": "shop"}});
        o.as_object_mut()
            .unwrap()
            .extend(rest.as_object().unwrap().clone());
        o
    };
    create(
        &c,
        &resource("", "v1", "Namespace", "namespaces"),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
    )
    .await;
    create(
        &c,
        &resource("", "v1", "ConfigMap", "configmaps"),
        ns(
            "ConfigMap",
            "settings",
            json!({"apiVersion": "v1", "data": {"color": "blue"}}),
        ),
    )
    .await;
    create(
        &c,
        &resource("", "v1", "Secret", "secrets"),
        ns(
            "Secret",
            "db",
            json!({"apiVersion": "v1", "type": "Opaque",
            "stringData": {"password": "s3cret-backup-value"}}),
        ),
    )
    .await;
    create(
        &c,
        &resource("", "v1", "Service", "services"),
        ns(
            "Service",
            "web",
            json!({"apiVersion": "v1",
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
        ),
    )
    .await;
    create(
        &c,
        &resource("apps", "v1", "Deployment", "deployments"),
        ns(
            "Deployment",
            "web",
            json!({"apiVersion": "apps/v1", "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}),
        ),
    )
    .await;
    create(
        &c,
        &resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
        ns(
            "PersistentVolumeClaim",
            "data",
            json!({"apiVersion": "v1", "spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
            "resources": {"requests": {"storage": "1Gi"}}}}),
        ),
    )
    .await;
    create(
        &c,
        &resource("rbac.authorization.k8s.io", "v1", "Role", "roles"),
        ns(
            "Role",
            "reader",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
        ),
    )
    .await;
    create(&c, &resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
        ns("RoleBinding", "reader", json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "User", "name": "ann", "apiGroup": "rbac.authorization.k8s.io"}]}))).await;
    // The CRD's kind is served once it is established.
    let crontabs = resource("stable.example.com", "v1", "CronTab", "crontabs");
    for attempt in 0.. {
        let obj: DynamicObject = serde_json::from_value(ns(
            "CronTab",
            "nightly",
            json!({"apiVersion": "stable.example.com/v1", "spec": {"cronSpec": "0 3 * * *"}}),
        ))
        .unwrap();
        match Api::<DynamicObject>::namespaced_with(c.clone(), "shop", &crontabs)
            .create(&PostParams::default(), &obj)
            .await
        {
            Ok(_) => break,
            Err(e) if attempt < 100 => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the CRD never served CronTabs: {e}"),
        }
    }
}

impl World {
    pub(crate) fn backups(&self) -> String {
        format!("/api/v1/clusters/{}/backups", self.cluster)
    }

    /// Takes a backup as tim (tenant admin) and waits until it is taken: the backup.
    pub(crate) async fn back_up(&self, include_secrets: bool) -> Value {
        self.back_up_with(json!({"include_secrets": include_secrets}))
            .await
    }

    /// Takes a backup asked for with `request` as tim and waits until it is taken.
    async fn back_up_with(&self, request: Value) -> Value {
        let (status, accepted) = call(
            &self.tim,
            &self.app,
            Method::POST,
            &self.backups(),
            Some(request),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
        assert_eq!(accepted["backup"]["state"], "running", "{accepted}");
        assert_eq!(accepted["operation"]["kind"], "backup", "{accepted}");
        let id = accepted["backup"]["id"].as_str().unwrap().to_owned();
        assert_eq!(accepted["operation"]["target"], id.as_str());
        let path = format!("{}/{id}", self.backups());
        for _ in 0..600 {
            let (status, body) = call(&self.tim, &self.app, Method::GET, &path, None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            match body["state"].as_str() {
                Some("succeeded") => return body,
                Some("failed") => panic!("the backup failed: {body}"),
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("backup {id} was never taken");
    }

    /// Waits (up to a minute) until restore `id` into cluster `target` has succeeded: it.
    pub(crate) async fn restored(&self, target: &str, id: &str) -> Value {
        let path = format!("/api/v1/clusters/{target}/restores/{id}");
        for _ in 0..600 {
            let (status, body) = call(&self.tim, &self.app, Method::GET, &path, None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            if body["state"] != "running" {
                assert_eq!(body["state"], "succeeded", "{body}");
                return body;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("restore {id} never ended");
    }

    /// `action` is in the audit log as tim's success and amy's (a member's) refusal.
    async fn assert_audited(&self, action: &str) {
        let events = self
            .app
            .audit(AuditQuery {
                action: Some(action.into()),
                ..Default::default()
            })
            .await;
        let by: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e.actor.as_str(), e.outcome.as_str()))
            .collect();
        assert!(by.contains(&("tim", "success")), "{action}: {by:?}");
        assert!(by.contains(&("amy", "denied")), "{action}: {by:?}");
    }

    async fn archive(&self, client: &reqwest::Client, id: &str) -> reqwest::Response {
        self.app
            .get_as(client, &format!("{}/{id}/archive", self.backups()))
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_back_up_a_cluster_and_download_an_archive_a_person_can_read() {
    let Some(w) = world().await else { return };
    furnish(&w).await;

    // Who may not: a member (403), another tenant (404), nobody (401); none is queued.
    let body = Some(json!({"include_secrets": false}));
    let (status, refused) = call(&w.amy, &w.app, Method::POST, &w.backups(), body.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    message(status, &refused);
    let (status, _) = call(&w.bea, &w.app, Method::POST, &w.backups(), body.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(&w.app.client, &w.app, Method::POST, &w.backups(), body).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = call(&w.amy, &w.app, Method::GET, &w.backups(), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let taken = w.back_up(false).await;
    let id = taken["id"].as_str().unwrap().to_owned();
    let contents = &taken["contents"];
    assert_eq!(contents["kubernetes_version"], "v1.20.2", "{contents}");
    assert_eq!(contents["secrets"], 0);
    assert!(
        contents["secrets_left_out"].as_u64().unwrap() >= 1,
        "{contents}"
    );
    let namespaces: Vec<&str> = contents["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(namespaces.contains(&"shop"), "{namespaces:?}");
    let kinds = contents["kinds"].as_array().unwrap();
    let count = |group: &str, kind: &str| {
        kinds
            .iter()
            .find(|k| k["group"] == group && k["kind"] == kind)
            .and_then(|k| k["count"].as_u64())
    };
    assert_eq!(count("stable.example.com", "CronTab"), Some(1), "{kinds:?}");
    assert_eq!(
        count("apiextensions.k8s.io", "CustomResourceDefinition"),
        Some(1)
    );
    assert_eq!(count("", "Secret"), None, "Secrets are not in the archive");
    let left_out = contents["left_out"].as_array().unwrap();
    let reason_for = |what: &str| {
        left_out
            .iter()
            .find(|l| l["what"] == what)
            .map(|l| l["reason"].as_str().unwrap().to_owned())
    };
    assert!(reason_for("Event").is_some(), "{left_out:?}");
    assert!(reason_for("ClusterRole.rbac.authorization.k8s.io")
        .unwrap()
        .contains("bootstrap"));
    let volumes = contents["volumes"].as_array().unwrap();
    assert!(
        volumes.iter().any(|v| v["kind"] == "PersistentVolumeClaim"
            && v["name"] == "data"
            && v["storage_class"] == "fast"
            && v["size"] == "1Gi"),
        "{volumes:?}"
    );
    assert!(contents["volume_guidance"]
        .as_str()
        .unwrap()
        .contains("VolumeSnapshot"));

    // The archive: a person finds each object where they look for it.
    let res = w.archive(&w.tim, &id).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "application/gzip");
    let disposition = res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        disposition.starts_with("attachment; filename=\"prod-"),
        "{disposition}"
    );
    let bytes = res.bytes().await.unwrap();
    assert_eq!(taken["size_bytes"].as_u64(), Some(bytes.len() as u64));
    let archive = read_archive(&bytes).unwrap();
    assert_eq!(archive.summary.cluster, "prod");
    let find = |path: &str| {
        archive
            .objects
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, o)| o.clone())
            .unwrap_or_else(|| panic!("{path} is not in the archive"))
    };
    let cm = find("shop/core/ConfigMap/settings.yaml");
    assert_eq!(cm["data"]["color"], "blue");
    let service = find("shop/core/Service/web.yaml");
    assert_eq!(service["spec"].get("clusterIP"), None, "{service}");
    let deployment = find("shop/apps/Deployment/web.yaml");
    assert_eq!(deployment["spec"]["replicas"], 1);
    find("shop/stable.example.com/CronTab/nightly.yaml");
    find("shop/rbac.authorization.k8s.io/Role/reader.yaml");
    find("shop/rbac.authorization.k8s.io/RoleBinding/reader.yaml");
    find("shop/core/PersistentVolumeClaim/data.yaml");
    find("_cluster/core/Namespace/shop.yaml");
    find("_cluster/apiextensions.k8s.io/CustomResourceDefinition/crontabs.stable.example.com.yaml");
    for (path, object) in &archive.objects {
        assert_ne!(object["kind"], "Secret", "{path}");
        assert_eq!(object.get("status"), None, "{path}");
        let meta = &object["metadata"];
        for field in [
            "uid",
            "resourceVersion",
            "managedFields",
            "creationTimestamp",
        ] {
            assert_eq!(meta.get(field), None, "{path}: {field}");
        }
        assert!(!path.ends_with("kube-root-ca.crt.yaml"), "{path}");
        assert!(!path.starts_with("kube-node-lease/"), "leases: {path}");
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert!(!text.contains("s3cret-backup-value"));

    // Who downloads is audited; members cannot download, other tenants find nothing.
    let res = w.archive(&w.amy, &id).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(w.archive(&w.bea, &id).await.status(), StatusCode::NOT_FOUND);
    let (status, _) = call(
        &w.bea,
        &w.app,
        Method::GET,
        &format!("{}/{id}", w.backups()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The portal's doors refuse the member the same way.
    let res = w
        .amy
        .post(format!("{}/sfn/take_backup", w.app.url))
        .form(&[("id", w.cluster.as_str())])
        .send()
        .await
        .unwrap();
    let to = res.headers()["location"].to_str().unwrap();
    assert!(to.ends_with("?error=permission+denied"), "{to}");
    let res = w
        .amy
        .post(format!("{}/sfn/cluster_backups", w.app.url))
        .form(&[("id", w.cluster.as_str())])
        .send()
        .await
        .unwrap();
    assert!(res.text().await.unwrap().contains("Forbidden"));
    let res = w
        .amy
        .get(format!(
            "{}/clusters/{}/backups/{id}/archive",
            w.app.url, w.cluster
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(res.headers()["location"]
        .to_str()
        .unwrap()
        .contains("error=permission"));
    w.assert_audited("backup.download").await;

    // With Secrets: counted, sealed in the vault, still never in the archive.
    let sealed = w.back_up(true).await;
    assert_eq!(sealed["contents"]["secrets"], 1, "{sealed}");
    assert_eq!(sealed["include_secrets"], true);
    let sealed_id = sealed["id"].as_str().unwrap().to_owned();
    let bytes = w.archive(&w.olga, &sealed_id).await.bytes().await.unwrap();
    let archive = read_archive(&bytes).unwrap();
    assert!(archive.objects.iter().all(|(_, o)| o["kind"] != "Secret"));
    let cluster = w.cluster.clone();
    let kept = w
        .app
        .on_server({
            let sealed_id = sealed_id.clone();
            move |s| async move {
                let b = s
                    .kqueen
                    .backups()
                    .get(
                        &kqueen_core::Actor::system(),
                        kqueen_core::BackupRef::of(&cluster, &sealed_id),
                    )
                    .await
                    .unwrap();
                let at = kqueen_core::vault::names::backup_secrets(b.tenant_id, b.id);
                s.kqueen.vault().get(&at).await.unwrap()
            }
        })
        .await
        .expect("the Secrets are sealed in the vault");
    let kept = String::from_utf8(kept.expose().to_vec()).unwrap();
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode("s3cret-backup-value");
    assert!(kept.contains(&encoded), "{} bytes", kept.len());
    assert!(kept.contains("name: db"));

    // The list, newest first; a backup of another cluster is not found under this one.
    let (status, list) = call(&w.tim, &w.app, Method::GET, &w.backups(), None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [sealed_id.as_str(), id.as_str()]);
    let (status, _) = call(
        &w.tim,
        &w.app,
        Method::GET,
        &format!("/api/v1/clusters/{}/backups/{id}", uuid::Uuid::now_v7()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    w.app.stop().await;
}

/// Imports a second real API server into team-a as `spare`: its id, and the server.
async fn spare(w: &World) -> (String, RealApiServer) {
    let kube = RealApiServer::start_with_controllers("*,-deployment,-replicaset")
        .await
        .expect("a second API server starts where the first did");
    let (status, body) = call(
        &w.tim,
        &w.app,
        Method::POST,
        "/api/v1/clusters",
        Some(
            json!({"tenant": "team-a", "name": "spare", "template": "import",
            "parameters": {"kubeconfig": kube.admin_kubeconfig()}}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["cluster"]["id"].as_str().unwrap().to_owned();
    wait_for_state(&w.app, &w.tim, &id, "ready").await;
    (id, kube)
}

/// The fates of a plan or a report, by `Kind namespace/name`.
fn fates(items: &Value) -> std::collections::BTreeMap<String, String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let name = match i["namespace"].as_str() {
                Some(ns) => format!(
                    "{} {ns}/{}",
                    i["kind"].as_str().unwrap(),
                    i["name"].as_str().unwrap()
                ),
                None => format!(
                    "{} {}",
                    i["kind"].as_str().unwrap(),
                    i["name"].as_str().unwrap()
                ),
            };
            (name, i["fate"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_restores_into_an_empty_cluster_whose_objects_then_equal_the_first() {
    let Some(w) = world().await else { return };
    furnish(&w).await;
    let backup = w.back_up(true).await;
    let id = backup["id"].as_str().unwrap().to_owned();
    let (target, kube) = spare(&w).await;
    let restore = format!("{}/{id}/restore", w.backups());

    // The plan into the backup's own cluster: everything is there already.
    let (status, plan) = call(
        &w.tim,
        &w.app,
        Method::POST,
        &format!("{restore}/plan"),
        Some(json!({"namespaces": ["shop"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    let own = fates(&plan["items"]);
    assert_eq!(own["ConfigMap shop/settings"], "unchanged", "{own:?}");
    assert_eq!(own["CronTab shop/nightly"], "unchanged", "{own:?}");
    assert!(
        own.values().all(|f| f == "unchanged" || f == "differs"),
        "{own:?}"
    );
    assert!(
        !own.contains_key("ClusterRole system:aggregate-to-view"),
        "other namespaces' and cluster-wide objects stay out"
    );

    // Refused: a namespace the backup does not hold (400), a member (403), another tenant (404).
    let body = Some(json!({"target_cluster": target, "namespaces": ["nope"]}));
    let (status, refused) = call(
        &w.tim,
        &w.app,
        Method::POST,
        &format!("{restore}/plan"),
        body,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert!(message(status, &refused).contains("nope"));
    let body = Some(json!({"target_cluster": target}));
    let (status, _) = call(&w.amy, &w.app, Method::POST, &restore, body.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(&w.bea, &w.app, Method::POST, &restore, body.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The plan into the empty cluster: everything to create, the custom resource once its CRD is.
    let (status, plan) = call(
        &w.tim,
        &w.app,
        Method::POST,
        &format!("{restore}/plan"),
        body.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert_eq!(plan["target_cluster_name"], "spare");
    let planned = fates(&plan["items"]);
    for what in [
        "CustomResourceDefinition crontabs.stable.example.com",
        "Namespace shop",
        "ConfigMap shop/settings",
        "Secret shop/db",
        "Deployment shop/web",
        "CronTab shop/nightly",
        "Role shop/reader",
        "RoleBinding shop/reader",
        "Service shop/web",
    ] {
        assert_eq!(
            planned.get(what).map(String::as_str),
            Some("will-create"),
            "{what}: {planned:?}"
        );
    }
    let stages: Vec<&str> = plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["stage"].as_str().unwrap())
        .collect();
    let first = |stage: &str| stages.iter().position(|s| *s == stage).unwrap();
    assert!(
        first("definitions") < first("namespaces")
            && first("namespaces") < first("config")
            && first("config") < first("workloads")
            && first("workloads") < first("other"),
        "{stages:?}"
    );

    // The restore runs on the spare cluster.
    let (status, accepted) = call(&w.tim, &w.app, Method::POST, &restore, body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    assert_eq!(accepted["operation"]["kind"], "restore");
    let restore_id = accepted["restore"]["id"].as_str().unwrap().to_owned();
    let done = w.restored(&target, &restore_id).await;
    let report = fates(&done["report"]);
    assert!(
        report.values().all(|f| f != "failed" && f != "cannot"),
        "{report:?}"
    );
    assert_eq!(report["CronTab shop/nightly"], "created");
    assert_eq!(report["Secret shop/db"], "created");

    // The spare cluster's objects now equal the backup's, Secrets included.
    let bytes = w.archive(&w.tim, &id).await.bytes().await.unwrap();
    let archive = read_archive(&bytes).unwrap();
    let spare_client = {
        let parsed =
            kqueen_core::kubernetes::parse_kubeconfig(&kube.admin_kubeconfig(), None, false)
                .unwrap();
        kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
            .await
            .unwrap()
    };
    let mut compared = 0;
    for (path, object) in archive
        .objects
        .iter()
        .filter(|(p, _)| p.starts_with("shop/"))
    {
        let kind = object["kind"].as_str().unwrap();
        let (group, version) =
            kqueen_core::backup::plan::group_version(object["apiVersion"].as_str().unwrap());
        let plural = format!("{}s", kind.to_lowercase());
        let r = resource(group, version, kind, &plural);
        let api: Api<DynamicObject> = Api::namespaced_with(spare_client.clone(), "shop", &r);
        let live = api
            .get(object["metadata"]["name"].as_str().unwrap())
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let live = kqueen_core::backup::clean::clean(
            object["apiVersion"].as_str().unwrap(),
            kind,
            serde_json::to_value(live).unwrap(),
        );
        assert_eq!(&live, object, "{path}");
        compared += 1;
    }
    assert!(compared >= 7, "{compared}");
    let secret: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(spare_client, "shop");
    let db = secret.get("db").await.unwrap();
    assert_eq!(db.data.unwrap()["password"].0, b"s3cret-backup-value");
    drop(kube);
    w.app.stop().await;
}

impl World {
    /// The backups of the cluster, newest first.
    async fn list_backups(&self) -> Vec<Value> {
        let (status, list) = call(&self.tim, &self.app, Method::GET, &self.backups(), None).await;
        assert_eq!(status, StatusCode::OK, "{list}");
        list.as_array().unwrap().clone()
    }

    /// Runs the due schedules as the engine's sweep would at `now`, then waits until no
    /// backup is running.
    async fn sweep_at(&self, now: chrono::DateTime<chrono::Utc>) {
        self.app
            .on_server(move |s| async move { s.kqueen.backups().run_schedules(now).await })
            .await
            .unwrap();
        for _ in 0..600 {
            if self
                .list_backups()
                .await
                .iter()
                .all(|b| b["state"] != "running")
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("a scheduled backup never finished");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_backs_up_when_due_and_keeps_the_newest() {
    let Some(w) = world().await else { return };
    let schedule = format!("{}/schedule", w.backups());
    let (status, _) = call(&w.tim, &w.app, Method::GET, &schedule, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "no schedule yet");
    let (status, _) = call(
        &w.amy,
        &w.app,
        Method::PUT,
        &schedule,
        Some(json!({"every_hours": 6, "keep": 2})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    for (body, field) in [
        (json!({"every_hours": 0, "keep": 2}), "every_hours"),
        (json!({"every_hours": 6, "keep": 101}), "keep"),
        // An imported cluster keeps no key space in KQueen's etcd.
        (
            json!({"every_hours": 6, "keep": 2, "kind": "key_space"}),
            "kind",
        ),
        (json!({"every_hours": 6, "keep": 2, "kind": "all"}), "kind"),
    ] {
        let (status, refused) = call(&w.tim, &w.app, Method::PUT, &schedule, Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
        assert!(message(status, &refused).contains(field), "{refused}");
    }
    let manual = w.back_up(false).await;
    let start = chrono::Utc::now();
    let (status, set) = call(
        &w.tim,
        &w.app,
        Method::PUT,
        &schedule,
        Some(json!({"every_hours": 6, "keep": 2})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(
        (set["every_hours"].as_u64(), set["keep"].as_u64()),
        (Some(6), Some(2))
    );
    let next: chrono::DateTime<chrono::Utc> = set["next_at"].as_str().unwrap().parse().unwrap();
    assert!(
        next <= chrono::Utc::now(),
        "a new schedule backs up at once: {set}"
    );

    // Due at once; then not before six hours.
    w.sweep_at(chrono::Utc::now()).await;
    let scheduled = |list: &[Value]| -> Vec<String> {
        list.iter()
            .filter(|b| b["requested_by"] == "schedule")
            .map(|b| {
                assert_eq!(b["state"], "succeeded", "{b}");
                b["id"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let first = scheduled(&w.list_backups().await);
    assert_eq!(first.len(), 1);
    w.sweep_at(chrono::Utc::now()).await;
    assert_eq!(
        scheduled(&w.list_backups().await),
        first,
        "not due again yet"
    );
    let (_, now) = call(&w.tim, &w.app, Method::GET, &schedule, None).await;
    let next: chrono::DateTime<chrono::Utc> = now["next_at"].as_str().unwrap().parse().unwrap();
    assert!(next >= start + chrono::Duration::hours(6), "{now}");

    // Three more periods: the newest two scheduled backups stay (the one running at a
    // sweep is not counted), the one taken by hand too.
    for period in 1..=3 {
        w.sweep_at(chrono::Utc::now() + chrono::Duration::hours(7 * period))
            .await;
    }
    let list = w.list_backups().await;
    let kept = scheduled(&list);
    assert_eq!(
        kept.len(),
        3,
        "two kept and the one taken at the last sweep: {list:?}"
    );
    assert!(
        !kept.contains(&first[0]),
        "the oldest scheduled backup is gone"
    );
    assert!(
        list.iter().any(|b| b["id"] == manual["id"]),
        "a manual backup stays"
    );
    let res = w.archive(&w.tim, &first[0]).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);

    let (status, _) = call(&w.tim, &w.app, Method::DELETE, &schedule, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call(&w.tim, &w.app, Method::DELETE, &schedule, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let events = w
        .app
        .audit(AuditQuery {
            action: Some("backup.schedule".into()),
            ..Default::default()
        })
        .await;
    assert!(
        events.len() >= 4,
        "set, refused twice, removed: {}",
        events.len()
    );
    w.app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_clusters_backup_is_found_by_tenant_restored_elsewhere_and_deleted() {
    let Some(w) = world().await else { return };
    furnish(&w).await;
    let backup = w.back_up(false).await;
    let id = backup["id"].as_str().unwrap().to_owned();
    assert_eq!(backup["cluster"], w.cluster.as_str());
    let (target, kube) = spare(&w).await;

    // The cluster goes; its backup stays.
    let path = format!("/api/v1/clusters/{}", w.cluster);
    let (status, body) = call(&w.tim, &w.app, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let mut gone = false;
    for _ in 0..600 {
        let (status, _) = call(&w.tim, &w.app, Method::GET, &path, None).await;
        if status == StatusCode::NOT_FOUND {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the cluster was never deleted");
    let (status, _) = call(&w.tim, &w.app, Method::GET, &w.backups(), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "no cluster, no cluster list");

    // Found by tenant: the tenant admin's and the operator's lists hold it, marked deleted.
    for (who, query) in [(&w.tim, ""), (&w.tim, "?tenant=team-a"), (&w.olga, "")] {
        let (status, list) = call(
            who,
            &w.app,
            Method::GET,
            &format!("/api/v1/backups{query}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{list}");
        let listed = list
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["backup"]["id"] == id.as_str())
            .unwrap_or_else(|| panic!("{query}: {list}"));
        assert_eq!(listed["cluster_deleted"], true);
        assert_eq!(listed["cluster_name"], "prod");
        assert_eq!(listed["tenant"], "team-a");
    }
    // Not to a member (none of their own, refused by tenant), another tenant, nobody.
    let (status, list) = call(&w.amy, &w.app, Method::GET, "/api/v1/backups", None).await;
    assert_eq!((status, list), (StatusCode::OK, json!([])));
    let by_tenant = "/api/v1/backups?tenant=team-a";
    let (status, _) = call(&w.amy, &w.app, Method::GET, by_tenant, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(&w.bea, &w.app, Method::GET, by_tenant, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(&w.app.client, &w.app, Method::GET, "/api/v1/backups", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let one = format!("/api/v1/backups/{id}");
    for (who, want) in [
        (&w.amy, StatusCode::FORBIDDEN),
        (&w.bea, StatusCode::NOT_FOUND),
        (&w.tim, StatusCode::OK),
    ] {
        let (status, body) = call(who, &w.app, Method::GET, &one, None).await;
        assert_eq!(status, want, "{body}");
    }
    for (method, path) in [
        (Method::DELETE, one.clone()),
        (Method::POST, format!("{one}/restore")),
        (Method::GET, format!("{one}/archive")),
    ] {
        let body = (method == Method::POST).then(|| json!({"target_cluster": target}));
        let (status, _) = call(&w.bea, &w.app, method.clone(), &path, body.clone()).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{method} {path} as another tenant"
        );
        let (status, _) = call(&w.amy, &w.app, method.clone(), &path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path} as a member");
    }

    // Restored by id: the target must be named, then the spare cluster gets its objects.
    let (status, refused) = call(
        &w.tim,
        &w.app,
        Method::POST,
        &format!("{one}/restore/plan"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert!(message(status, &refused).contains("deleted"), "{refused}");
    let body = Some(json!({"target_cluster": target, "namespaces": ["shop"]}));
    let (status, plan) = call(
        &w.tim,
        &w.app,
        Method::POST,
        &format!("{one}/restore/plan"),
        body.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    assert_eq!(
        fates(&plan["items"])["ConfigMap shop/settings"],
        "will-create"
    );
    let (status, accepted) = call(
        &w.tim,
        &w.app,
        Method::POST,
        &format!("{one}/restore"),
        body,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    let restore_id = accepted["restore"]["id"].as_str().unwrap().to_owned();
    let done = w.restored(&target, &restore_id).await;
    assert_eq!(fates(&done["report"])["ConfigMap shop/settings"], "created");
    let res = w.app.get_as(&w.tim, &format!("{one}/archive")).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(!res.bytes().await.unwrap().is_empty());

    // Deleted by hand: gone from the list, its archive too; audited.
    let (status, body) = call(&w.tim, &w.app, Method::DELETE, &one, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, _) = call(&w.tim, &w.app, Method::GET, &one, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let res = w.app.get_as(&w.tim, &format!("{one}/archive")).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let (_, list) = call(&w.olga, &w.app, Method::GET, "/api/v1/backups", None).await;
    assert_eq!(list, json!([]));
    let (status, _) = call(&w.tim, &w.app, Method::DELETE, &one, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "deleted once");
    w.assert_audited("backup.delete").await;
    drop(kube);
    w.app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_snapshots_are_asked_for_where_the_cluster_serves_the_snapshot_api() {
    let Some(w) = world().await else { return };
    furnish(&w).await;
    let wanted = json!({"include_secrets": false, "snapshot_volumes": true});

    // No snapshot API: the backup is taken and says why no VolumeSnapshot was asked for.
    let taken = w.back_up_with(wanted.clone()).await;
    assert_eq!(taken["snapshot_volumes"], true);
    let contents = &taken["contents"];
    assert_eq!(contents["snapshots"], json!([]), "{contents}");
    assert!(
        contents["snapshot_note"]
            .as_str()
            .unwrap()
            .contains("does not serve the snapshot API"),
        "{contents}"
    );

    // With the VolumeSnapshot CRD served: one of the claim shop/data, labelled with the backup.
    let c = w.admin_client().await;
    create(
        &c,
        &resource(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            // A *.k8s.io group: the upstream CRDs carry this approval, as must any.
            "metadata": {"name": "volumesnapshots.snapshot.storage.k8s.io",
                "annotations": {"api-approved.kubernetes.io":
                    "https://github.com/kubernetes-csi/external-snapshotter/pull/419"}},
            "spec": {"group": "snapshot.storage.k8s.io", "scope": "Namespaced",
                "names": {"plural": "volumesnapshots", "singular": "volumesnapshot",
                    "kind": "VolumeSnapshot"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    )
    .await;
    let snapshots = resource(
        "snapshot.storage.k8s.io",
        "v1",
        "VolumeSnapshot",
        "volumesnapshots",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), "shop", &snapshots);
    let mut served = false;
    for _ in 0..100 {
        if api.list(&Default::default()).await.is_ok() {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served, "the VolumeSnapshot CRD was never served");
    let taken = w.back_up_with(wanted).await;
    let id = taken["id"].as_str().unwrap();
    let asked = taken["contents"]["snapshots"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["namespace"], "shop");
    assert_eq!(asked[0]["claim"], "data");
    assert_eq!(asked[0]["created"], true, "{asked:?}");
    assert_eq!(taken["contents"]["snapshot_note"], Value::Null);
    let name = asked[0]["name"].as_str().unwrap();
    let live = api.get(name).await.unwrap();
    assert_eq!(
        live.data["spec"]["source"]["persistentVolumeClaimName"],
        "data"
    );
    assert_eq!(
        live.metadata.labels.unwrap()["kqueen.io/backup"],
        id.to_owned()
    );

    // Not asked for: none.
    let plain = w.back_up(false).await;
    assert_eq!(plain["snapshot_volumes"], false);
    assert_eq!(plain["contents"]["snapshots"], json!([]));
    assert_eq!(plain["contents"]["snapshot_note"], Value::Null);
    let all = api.list(&Default::default()).await.unwrap();
    assert_eq!(
        all.items.len(),
        1,
        "one VolumeSnapshot, of the backup that asked"
    );
    w.app.stop().await;
}
