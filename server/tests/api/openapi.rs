//! The OpenAPI document tells the truth: the limits the core enforces are in the schemas,
//! every status the middlewares and extractors answer is documented on every operation it
//! can happen on, the kubeconfig is YAML; and a malformed body answers 400 naming the field
//! in plain words. `scripts/api-fuzz.sh` (schemathesis, `make api-fuzz`) checks the rest.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::TestApp;

async fn document(app: &TestApp) -> Value {
    app.get("/api/v1/openapi.json").await.json().await.unwrap()
}

#[tokio::test]
async fn the_schemas_carry_the_limits_the_core_enforces() {
    let app = TestApp::sqlite().await;
    let doc = document(&app).await;
    let schemas = &doc["components"]["schemas"];
    let prop = |schema: &str, field: &str| schemas[schema]["properties"][field].clone();

    let nodes = prop("ScaleIn", "node_count");
    assert_eq!(
        (&nodes["type"], &nodes["minimum"], &nodes["maximum"]),
        (&json!("integer"), &json!(1), &json!(1000)),
        "{nodes}"
    );
    for schema in ["MemberIn", "TenantRole"] {
        assert_eq!(
            prop(schema, "role")["$ref"],
            "#/components/schemas/RoleName",
            "{schema}"
        );
    }
    assert_eq!(schemas["RoleName"]["enum"], json!(["member", "admin"]));
    let label = kqueen_server::api::DNS_LABEL;
    for (schema, field) in [("TenantIn", "slug"), ("ClusterIn", "name")] {
        let p = prop(schema, field);
        assert_eq!(p["pattern"], label, "{schema}.{field}: {p}");
        assert_eq!(p["maxLength"], 63, "{schema}.{field}: {p}");
    }
    assert!(prop("UpgradeIn", "kubernetes_version")["pattern"].is_string());
    for schema in ["TemplateIn", "TemplateOut"] {
        let t = prop(schema, "timeout_minutes");
        let kind = t["type"].clone();
        assert!(
            kind == json!("integer") || kind == json!(["integer", "null"]),
            "{schema}: {t}"
        );
        assert_eq!((&t["minimum"], &t["maximum"]), (&json!(1), &json!(10080)));
    }
    let days = prop("TokenIn", "days");
    assert_eq!(
        (&days["minimum"], &days["maximum"]),
        (&json!(1), &json!(365))
    );
    assert_eq!(
        schemas["AdminAccessIn"]["enum"],
        json!(["", "namespaced", "cluster-admin"])
    );
    app.stop().await;
}

#[tokio::test]
async fn every_operation_documents_the_answers_it_can_give() {
    let app = TestApp::sqlite().await;
    let doc = document(&app).await;
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() > 20, "{}", paths.len());
    let text = doc.to_string();
    assert!(!text.contains("\"422\""), "nothing answers 422");
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let answers = op["responses"].as_object().unwrap();
            let has = |status: &str| {
                let a = &answers[status];
                assert!(
                    a["content"]["application/json"]["schema"]["$ref"]
                        == "#/components/schemas/ErrorOut",
                    "{method} {path} {status}: {a}"
                );
            };
            // Open to all: only the routes that log one in (no 401 to document).
            if op.get("security") == Some(&json!([{}])) {
                assert!(
                    path.starts_with("/api/v1/login/"),
                    "{method} {path} is open"
                );
                assert!(
                    !answers.contains_key("401") || path.ends_with("/token"),
                    "{path}"
                );
            } else {
                has("401");
            }
            if op.get("requestBody").is_some() {
                for status in ["400", "413", "415"] {
                    has(status);
                }
            }
            if method != "get" {
                has("403");
            }
            if path.contains('{') {
                has("404");
            }
        }
    }
    // Query parameters are documented in the query (not as path parameters).
    let list = doc["paths"]["/api/v1/clusters"]["get"]["parameters"]
        .as_array()
        .unwrap();
    for p in list {
        assert_eq!(p["in"], "query", "{p}");
    }
    // The login routes are the open ones, and they are open.
    let open: Vec<&String> = paths
        .iter()
        .filter(|(_, item)| item["post"]["security"] == json!([{}]))
        .map(|(path, _)| path)
        .collect();
    assert_eq!(open, ["/api/v1/login/device", "/api/v1/login/device/token"]);
    // A write with no credential at all answers 401 (it has nothing a forger could use).
    let res = app
        .client
        .post(format!("{}/api/v1/tokens", app.url))
        .json(&json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let kubeconfig = &doc["paths"]["/api/v1/clusters/{id}/kubeconfig"]["get"]["responses"]["200"];
    let media: Vec<&String> = kubeconfig["content"].as_object().unwrap().keys().collect();
    assert_eq!(media, ["application/yaml"], "{kubeconfig}");
    app.stop().await;
}

#[tokio::test]
async fn malformed_bodies_answer_400_naming_the_field_in_plain_words() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[]).await;
    let id = "0190a4c4-0000-7000-8000-000000000000";
    let scale = format!("/api/v1/clusters/{id}/scale");
    let cases = [
        (
            Method::POST,
            scale.as_str(),
            r#"{"node_count": "three"}"#,
            "node_count: must be a whole number from 0 to 4294967295",
        ),
        (
            Method::POST,
            scale.as_str(),
            r#"{"node_count": -1}"#,
            "node_count: must be a whole number from 0 to 4294967295",
        ),
        (
            Method::POST,
            scale.as_str(),
            "{}",
            "node_count: is required",
        ),
        (
            Method::POST,
            "/api/v1/tokens",
            r#"{"name": 1}"#,
            "name: must be text",
        ),
        (
            Method::POST,
            "/api/v1/templates",
            r#"{"name": "t", "provider": "p", "tenants": ["a", 2]}"#,
            "tenants[1]: must be text",
        ),
        (
            Method::PUT,
            "/api/v1/tenants/team-a/quota",
            r#"{"max_nodes": true}"#,
            "max_nodes: must be a whole number from 0 to 4294967295",
        ),
        (
            Method::POST,
            "/api/v1/tokens",
            "[]",
            "the body must be an object",
        ),
        (
            Method::POST,
            "/api/v1/clusters",
            r#"{"name": "#,
            "the body ends before its JSON does (line 1, column 9)",
        ),
        (
            Method::POST,
            "/api/v1/clusters",
            "{name: 1}",
            "the body is not valid JSON (line 1, column 2)",
        ),
    ];
    // Over the body limit (refused before the API's router, on Content-Length alone) and
    // not JSON: the API's shape too.
    let huge = format!(
        "{{\"name\": \"{}\"}}",
        "x".repeat(kqueen_server::routes::BODY_LIMIT)
    );
    for (content_type, body, status) in [
        ("application/json", huge, StatusCode::PAYLOAD_TOO_LARGE),
        (
            "text/plain",
            "{}".to_owned(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
    ] {
        // A fresh connection each: the server closes one whose body it refused.
        let olga = app.browser();
        app.login(&olga, "olga", crate::helpers::PASSWORD).await;
        let res = olga
            .post(format!("{}/api/v1/tokens", app.url))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), status);
        let answer: Value = res.json().await.unwrap();
        assert_eq!(answer["status"], status.as_u16(), "{answer}");
    }
    for (method, path, body, want) in cases {
        let res = olga
            .request(method.clone(), format!("{}{path}", app.url))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::BAD_REQUEST,
            "{method} {path} {body}"
        );
        let answer: Value = res.json().await.unwrap();
        assert_eq!(
            answer,
            json!({"error": want, "status": 400}),
            "{method} {path} {body}"
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn names_are_taken_exactly_as_given_as_the_pattern_says() {
    let app = TestApp::sqlite().await;
    app.seed_tenant("team-a", "Team A").await;
    let olga = app.user("olga", true, &[("team-a", "admin")]).await;
    let call = |method: Method, path: &'static str, body: Value| {
        let req = olga
            .request(method, format!("{}{path}", app.url))
            .json(&body);
        async move {
            let res = req.send().await.unwrap();
            (res.status(), res.json::<Value>().await.unwrap())
        }
    };
    let spaced = "must not start or end with a space";
    for (path, body, want) in [
        (
            "/api/v1/tenants",
            json!({"slug": " team-b"}),
            format!("slug: {spaced}"),
        ),
        (
            "/api/v1/providers",
            json!({"name": "lab ", "kind": "import"}),
            format!("name: {spaced}"),
        ),
        (
            "/api/v1/templates",
            json!({"name": "\tsmall", "provider": "lab"}),
            format!("name: {spaced}"),
        ),
    ] {
        let (status, answer) = call(Method::POST, path, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {answer}");
        assert_eq!(answer["error"], want, "{path}");
    }
    // Nothing was created under the trimmed name either; the exact names work.
    for (path, body) in [
        (
            "/api/v1/providers",
            json!({"name": "lab", "kind": "import"}),
        ),
        (
            "/api/v1/templates",
            json!({"name": "small", "provider": "lab"}),
        ),
    ] {
        let (status, answer) = call(Method::POST, path, body).await;
        assert_eq!(status, StatusCode::CREATED, "{path}: {answer}");
    }
    let (status, answer) = call(
        Method::POST,
        "/api/v1/clusters",
        json!({"tenant": "team-a", "name": "dev ", "template": "small",
               "parameters": {"kubeconfig": "apiVersion: v1"}}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"], format!("name: {spaced}"));
    let (status, answer) = call(Method::GET, "/api/v1/tenants/team-b", Value::Null).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    // The document's pattern (a DNS label, anchored) admits no space anywhere.
    let doc = document(&app).await;
    let slug = &doc["components"]["schemas"]["TenantIn"]["properties"]["slug"]["pattern"];
    assert_eq!(slug, kqueen_server::api::DNS_LABEL);
    app.stop().await;
}

/// Every pattern in `v` (with where it is).
fn patterns(v: &Value, at: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            if let Some(p) = map.get("pattern").and_then(Value::as_str) {
                out.push((at.clone(), p.to_owned()));
            }
            for (k, v) in map {
                patterns(v, format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                patterns(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn every_name_follows_the_one_name_rule() {
    const LABEL: &str = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$";
    let app = TestApp::sqlite().await;
    let doc = document(&app).await;
    let schemas = &doc["components"]["schemas"];
    for (schema, field) in [
        ("TenantIn", "slug"),
        ("TemplateIn", "name"),
        ("ClusterIn", "name"),
        ("ProviderInImport", "name"),
        ("ProviderUpdateInHosted", "name"),
    ] {
        assert_eq!(
            schemas[schema]["properties"][field]["pattern"], LABEL,
            "{schema}.{field}"
        );
    }
    // Wherever a DNS-1123 label is asked for, it is this rule (or this rule or nothing).
    let mut found = Vec::new();
    patterns(&doc, String::new(), &mut found);
    let labels: Vec<&(String, String)> = found
        .iter()
        .filter(|(_, p)| p.contains("[a-z0-9]([-a-z0-9]"))
        .collect();
    assert!(labels.len() >= 5, "{labels:?}");
    assert!(
        !doc.to_string().contains("dns-label"),
        "the format is replaced by its pattern"
    );
    for (at, p) in labels {
        assert!(
            p == LABEL || *p == format!("^({})?$", &LABEL[1..LABEL.len() - 1]),
            "{at}: {p}"
        );
    }
}

/// Path parameters say what they accept (names by the name rule, usernames by theirs, ids
/// as UUIDs), every id sent is a UUID, and required text may not be empty: a client
/// generated from the document sends what the server takes.
#[tokio::test]
async fn parameters_ids_and_required_text_say_what_they_accept() {
    const LABEL: &str = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$";
    let app = TestApp::sqlite().await;
    let doc = document(&app).await;
    let mut seen = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for op in item.as_object().unwrap().values() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["in"] != "path" {
                    continue;
                }
                let (name, schema) = (p["name"].as_str().unwrap(), &p["schema"]);
                let want = match name {
                    "slug" => ("pattern", json!(LABEL)),
                    "name"
                        if path.starts_with("/api/v1/templates")
                            || path == "/api/v1/providers/{name}" =>
                    {
                        ("pattern", json!(LABEL))
                    }
                    "username" => ("pattern", json!("^[A-Za-z0-9._@+-]{1,64}$")),
                    "id" | "app" => ("format", json!("uuid")),
                    _ => continue,
                };
                assert_eq!(schema[want.0], want.1, "{path} {name}: {schema}");
                seen += 1;
            }
        }
    }
    assert!(seen >= 30, "{seen}");
    let schemas = &doc["components"]["schemas"];
    for schema in [
        "ProviderOut",
        "TemplateOut",
        "ClusterOut",
        "Operation",
        "Event",
        "Application",
    ] {
        assert_eq!(
            schemas[schema]["properties"]["id"]["format"], "uuid",
            "{schema}: {}",
            schemas[schema]
        );
    }
    // Required text may not be empty (an addon definition's manifests are sent empty in the
    // catalog's list, so only its input checks them).
    assert_eq!(
        schemas["DeployRequest"]["properties"]["manifests"]["minLength"],
        1
    );
    assert_eq!(
        schemas["AddonDefinition"]["properties"]["namespace"]["pattern"],
        LABEL
    );
}

#[tokio::test]
async fn the_provider_kinds_are_one_enum_with_every_kind() {
    let app = TestApp::sqlite().await;
    let doc = document(&app).await;
    let schemas = &doc["components"]["schemas"];
    let every: Vec<&str> = kqueen_core::provisioner::ProviderKind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(schemas["ProviderKind"]["enum"], json!(every));
    assert_eq!(every.len(), 5);
    for (schema, field) in [
        ("KindOut", "kind"),
        ("ProviderOut", "kind"),
        ("TemplateOut", "kind"),
        ("ClusterOut", "kind"),
    ] {
        assert_eq!(
            schemas[schema]["properties"][field]["$ref"], "#/components/schemas/ProviderKind",
            "{schema}.{field}"
        );
    }
}

#[tokio::test]
async fn provider_bodies_are_described_per_kind_and_checked_as_described() {
    let app = TestApp::sqlite().await;
    let olga = app.user("olga", true, &[]).await;
    let doc = document(&app).await;
    let schemas = &doc["components"]["schemas"];
    for body in ["ProviderIn", "ProviderUpdateIn"] {
        let s = &schemas[body];
        assert_eq!(s["discriminator"]["propertyName"], "kind", "{s}");
        let mapping = s["discriminator"]["mapping"].as_object().unwrap();
        let mut kinds: Vec<&String> = mapping.keys().collect();
        kinds.sort();
        assert_eq!(
            kinds,
            ["cluster-api", "command", "hosted", "import", "jenkins"],
            "{s}"
        );
        assert_eq!(s["oneOf"].as_array().unwrap().len(), 5);
    }
    let command = &schemas["ProviderInCommand"]["properties"];
    assert_eq!(command["kind"]["enum"], json!(["command"]));
    let settings = &command["settings"];
    assert_eq!(settings["additionalProperties"], false);
    assert_eq!(settings["required"], json!(["create_command"]));
    let p = &settings["properties"];
    assert_eq!(p["create_command"]["format"], "command-line");
    assert_eq!(p["create_command"]["maxLength"], 2000);
    assert_eq!(p["shell"]["type"], json!(["boolean", "null"]));
    assert_eq!(
        (
            &p["timeout_seconds"]["type"],
            &p["timeout_seconds"]["minimum"]
        ),
        (&json!(["integer", "null"]), &json!(1))
    );
    assert_eq!(p["environment"]["writeOnly"], true);
    // On edit, secret settings may be left out (they keep their value).
    let jenkins = &schemas["ProviderUpdateInJenkins"]["properties"]["settings"];
    assert_eq!(jenkins["required"], json!(["url", "job", "username"]));
    let hosted = &schemas["ProviderInHosted"]["properties"]["settings"]["oneOf"];
    assert_eq!(
        hosted[1]["properties"]["runtime"]["enum"],
        json!(["kubernetes"])
    );

    // The server checks what the document says: JSON types, the kind on edit.
    let send = |method: Method, path: &'static str, body: Value| {
        let req = olga
            .request(method, format!("{}{path}", app.url))
            .json(&body);
        async move {
            let res = req.send().await.unwrap();
            (res.status(), res.json::<Value>().await.unwrap())
        }
    };
    let (status, answer) = send(
        Method::POST,
        "/api/v1/providers",
        json!({"name": "lab", "kind": "command",
               "settings": {"create_command": "/bin/true", "timeout_seconds": "60"}}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(
        answer["error"],
        "settings: timeout_seconds: must be a whole number"
    );
    let (status, answer) = send(
        Method::POST,
        "/api/v1/providers",
        json!({"name": "lab", "kind": "command",
               "settings": {"create_command": "/bin/true", "timeout_seconds": 60, "shell": null}}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    for (body, want) in [
        (
            json!({"name": "lab", "settings": {"create_command": "/bin/true"}}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"name": "lab", "kind": "import", "settings": {}}),
            StatusCode::CONFLICT,
        ),
        (
            json!({"name": "lab", "kind": "command", "settings": {"create_command": "/bin/false"}}),
            StatusCode::OK,
        ),
    ] {
        let (status, answer) = send(Method::PUT, "/api/v1/providers/lab", body.clone()).await;
        assert_eq!(status, want, "{body}: {answer}");
    }
    app.stop().await;
}
