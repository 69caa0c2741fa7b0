//! What the cluster list's hydration script carries of each cluster: what its table shows.
//!
//! The list's server function answers `kqueen_dto`'s `Cluster`, as `/api/v1/clusters` does
//! (`server/tests/api/same_types.rs`), and the browser fetching a page of the list gets all
//! of it. The page's first load hands its data to the browser in the hydration script
//! ([`crate::hydrated`]), where every field of every row was serialised, base64-encoded and
//! written again; the table shows nine of them. Callgrind of `/clusters`
//! (`scripts/bench-instructions.sh`, 2026-11-29) put 27 % of the page's instructions in
//! writing that script. While it is written, a row carries only the shown fields, as a
//! [`ScriptRow`] (an array, without the keys); `Cluster`'s decoder reads the others back as
//! none, empty or false.

use std::collections::BTreeMap;

use kqueen_dto::clusters::Cluster;
use serde::Serialize;

use crate::hydrated::ScriptRow;

/// Neither shown nor sent: read back as none.
const NONE: Option<()> = None;

impl ScriptRow for Cluster {
    /// `Cluster`'s sixteen fields in order; what `list.rs`' table shows, and the rest empty.
    fn script_form(&self) -> impl Serialize + '_ {
        let Cluster {
            id,
            tenant,
            name,
            template,
            kind,
            state,
            parameters: _,
            node_count,
            endpoint: _,
            error: _,
            expires_at,
            production: _,
            created_by: _,
            created_at,
            progress: _,
            current_step: _,
        } = self;
        (
            id,
            tenant,
            name,
            template,
            kind,
            state,
            BTreeMap::<(), ()>::new(),
            node_count,
            NONE,
            NONE,
            expires_at,
            false,
            "",
            created_at,
            NONE,
            NONE,
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hydrated::{Hydrated, ScriptJson};
    use kqueen_dto::clusters::ClusterState;
    use kqueen_dto::kinds::ProviderKind;
    use leptos::server::codee::{Decoder, Encoder};
    use serde::Deserialize;

    /// A page of clusters as `ClustersPageDto` holds them (the server scenario
    /// `cluster_pages_render_and_forms_work_without_javascript` checks the real page).
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct ClustersPageDto {
        #[serde(serialize_with = "crate::hydrated::rows")]
        clusters: Vec<Cluster>,
        total: u64,
    }

    fn cluster(n: u32) -> Cluster {
        Cluster {
            id: format!("0190f6a0-0000-7000-8000-00000000000{n}"),
            tenant: "acme".into(),
            name: format!("c-{n}"),
            template: "small".into(),
            kind: ProviderKind::Hosted,
            state: ClusterState::Ready,
            parameters: BTreeMap::from([("node_count".into(), "3".into())]),
            node_count: 3,
            endpoint: Some("https://127.0.0.1:6443".into()),
            error: Some("the secret error".into()),
            expires_at: (n == 1).then(|| "2026-12-01T00:00:00Z".into()),
            production: true,
            created_by: "someone@example.com".into(),
            created_at: "2026-11-30T01:02:03Z".into(),
            progress: Some(40),
            current_step: Some("waiting".into()),
        }
    }

    fn page() -> ClustersPageDto {
        ClustersPageDto {
            clusters: vec![cluster(1), cluster(2)],
            total: 2,
        }
    }

    #[test]
    fn the_script_carries_what_the_table_shows_and_reads_back() {
        let value: Result<Hydrated<ClustersPageDto>, String> = Ok(Hydrated(page()));
        let bytes = <ScriptJson as Encoder<_>>::encode(&value).unwrap();
        let json = String::from_utf8(bytes.clone()).unwrap();
        for hidden in [
            "node_count\":\"3",
            "127.0.0.1",
            "secret",
            "someone",
            "waiting",
            // Rows are arrays: no key of theirs is written.
            "\"template\"",
            "\"created_at\"",
        ] {
            assert!(!json.contains(hidden), "{hidden} in {json}");
        }
        let back: Result<Hydrated<ClustersPageDto>, String> =
            <ScriptJson as Decoder<_>>::decode(&bytes).unwrap();
        let back = back.unwrap().0;
        assert_eq!(back.total, 2);
        for (got, sent) in back.clusters.iter().zip(page().clusters) {
            let shown = |c: &Cluster| {
                (
                    c.id.clone(),
                    c.tenant.clone(),
                    c.name.clone(),
                    c.template.clone(),
                    c.kind,
                    c.state,
                    c.node_count,
                    c.created_at.clone(),
                    c.expires_at.clone(),
                )
            };
            assert_eq!(shown(got), shown(&sent));
            assert!(got.parameters.is_empty() && got.created_by.is_empty());
            assert_eq!(
                (got.endpoint.as_deref(), got.error.as_deref()),
                (None, None)
            );
            assert_eq!((got.progress, got.current_step.as_deref()), (None, None));
            assert!(!got.production);
        }
        assert_eq!(back.clusters.len(), 2);
    }

    #[test]
    fn the_server_functions_answer_keeps_every_field() {
        let json = serde_json::to_string(&page()).unwrap();
        let back: ClustersPageDto = serde_json::from_str(&json).unwrap();
        assert_eq!(back, page());
    }
}
