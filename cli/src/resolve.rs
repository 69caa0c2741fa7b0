//! Finding a cluster from what a person types: its UUID, `tenant/name`, or a name.

use kqueen_dto::clusters::{Cluster, ClusterDetail, ClusterList};

use crate::api::{query, segment, Api};
use crate::error::{CliError, Result};

/// True for the 36-character form of a UUID (what the API's ids look like).
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.chars().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The cluster `reference` names, as the caller sees it.
pub async fn cluster(api: &Api, reference: &str) -> Result<Cluster> {
    let reference = reference.trim();
    if is_uuid(reference) {
        let detail: ClusterDetail = api
            .get(&format!("/api/v1/clusters/{}", segment(reference)))
            .await?;
        return Ok(detail.cluster);
    }
    let (tenant, name) = match reference.split_once('/') {
        Some((t, n)) => (Some(t), n),
        None => (None, reference),
    };
    if name.is_empty() {
        return Err(CliError::Usage(
            "name a cluster: its UUID, tenant/name, or name".into(),
        ));
    }
    let list: ClusterList = api
        .get(&format!(
            "/api/v1/clusters{}",
            query(&[
                ("name", Some(name)),
                ("tenant", tenant),
                ("limit", Some("500")),
            ])
        ))
        .await?;
    pick(list.items, reference, name)
}

fn pick(items: Vec<Cluster>, reference: &str, name: &str) -> Result<Cluster> {
    let mut exact: Vec<Cluster> = items.into_iter().filter(|c| c.name == name).collect();
    match exact.len() {
        0 => Err(CliError::NotFound(format!(
            "no cluster {reference:?} that you may see"
        ))),
        1 => Ok(exact.remove(0)),
        _ => {
            let names: Vec<String> = exact
                .iter()
                .map(|c| format!("{}/{}", c.tenant, c.name))
                .collect();
            Err(CliError::Usage(format!(
                "several clusters are called {name:?}: {}; name one as tenant/name",
                names.join(", ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use kqueen_dto::clusters::ClusterState;
    use kqueen_dto::kinds::ProviderKind;

    use super::*;

    fn cluster(tenant: &str, name: &str) -> Cluster {
        Cluster {
            id: "00000000-0000-0000-0000-000000000000".into(),
            tenant: tenant.into(),
            name: name.into(),
            template: "t".into(),
            kind: ProviderKind::Import,
            state: ClusterState::Ready,
            parameters: Default::default(),
            node_count: 0,
            endpoint: None,
            error: None,
            expires_at: None,
            production: false,
            created_by: "amy".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            progress: None,
            current_step: None,
        }
    }

    #[test]
    fn uuids_are_recognised() {
        assert!(is_uuid("0195f0a2-7c3e-7d4a-9b1e-3f2a1c0d9e8f"));
        assert!(!is_uuid("prod"));
        assert!(!is_uuid("0195f0a2x7c3e-7d4a-9b1e-3f2a1c0d9e8f"));
    }

    #[test]
    fn names_match_exactly_and_ambiguity_asks_for_the_tenant() {
        let found = pick(
            vec![cluster("a", "prod-2"), cluster("a", "prod")],
            "prod",
            "prod",
        );
        assert_eq!(found.map(|c| c.name).ok().as_deref(), Some("prod"));
        let e = pick(vec![cluster("a", "prod-2")], "prod", "prod").unwrap_err();
        assert_eq!(e.exit_code(), 5);
        let e = pick(
            vec![cluster("a", "prod"), cluster("b", "prod")],
            "prod",
            "prod",
        )
        .unwrap_err();
        assert!(e.to_string().contains("a/prod, b/prod"), "{e}");
    }
}
