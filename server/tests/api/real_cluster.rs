//! The real kube-apiserver imported as a cluster through the API, for the workload tests
//! (applications and addons).

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clusters::{call, offer_import, wait_for_state};
use crate::helpers::TestApp;
use kqueen_testkit::apiserver::RealApiServer;

/// A server with tenants team-a (amy, member; tim, admin) and team-b (bea, member), the
/// operator olga, and the real API server imported as cluster `prod` of team-a, Ready.
pub struct World {
    pub app: TestApp,
    pub kube: RealApiServer,
    pub olga: reqwest::Client,
    pub amy: reqwest::Client,
    pub tim: reqwest::Client,
    pub bea: reqwest::Client,
    pub cluster: String,
}

pub async fn world() -> Option<World> {
    // Prints why when it cannot start (no KQUEEN_TEST_KUBE_APISERVER): the test then skips.
    let kube = RealApiServer::start_with_controllers("*,-deployment,-replicaset").await?;
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    app.seed_tenant("team-b", "Team B").await;
    let olga = app.user("olga", true, &[]).await;
    let amy = app.user("amy", false, &[("team-a", "member")]).await;
    let tim = app.user("tim", false, &[("team-a", "admin")]).await;
    let bea = app.user("bea", false, &[("team-b", "member")]).await;
    offer_import(&app, &olga).await;
    let (status, body) = call(
        &amy,
        &app,
        Method::POST,
        "/api/v1/clusters",
        Some(
            json!({"tenant": "team-a", "name": "prod", "template": "import",
            "parameters": {"kubeconfig": kube.admin_kubeconfig()}}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let cluster = body["cluster"]["id"].as_str().unwrap().to_owned();
    wait_for_state(&app, &amy, &cluster, "ready").await;
    Some(World {
        app,
        kube,
        olga,
        amy,
        tim,
        bea,
        cluster,
    })
}

impl World {
    /// A client of the API server with its admin's rights (to look behind KQueen's back).
    pub async fn admin_client(&self) -> kube::Client {
        let parsed =
            kqueen_core::kubernetes::parse_kubeconfig(&self.kube.admin_kubeconfig(), None, false)
                .unwrap();
        kqueen_core::kubernetes::client(&parsed, Duration::from_secs(10))
            .await
            .unwrap()
    }
}

/// `error` of an error answer (the API's shape: `{"error": message, "status": code}`).
pub fn message(status: StatusCode, body: &Value) -> String {
    assert_eq!(body["status"], status.as_u16(), "{body}");
    let m = body["error"].as_str().unwrap_or_default().to_owned();
    assert!(!m.is_empty(), "{status}: {body}");
    m
}
