//! `/clusters/:id/join`: the `kubeadm join` command for a worker node of a hosted cluster,
//! with its bootstrap token and when it expires, and a button to revoke the token.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};

use crate::components::{ErrorNote, FormError};
use crate::time::to_minute;
use crate::AppError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinPageDto {
    pub cluster_name: String,
    pub join: kqueen_dto::clusters::Join,
}

/// The join command (a token is created when none has an hour or more left).
#[server(prefix = "/sfn", endpoint = "cluster_join")]
pub async fn join_page(id: String) -> Result<JoinPageDto, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let join = k.clusters().join_info(&actor, &id).await?;
    let cluster = k.clusters().cluster_detail(&actor, &id).await?.cluster;
    Ok(JoinPageDto {
        cluster_name: format!("{}/{}", cluster.tenant_slug, cluster.name),
        join: join.into(),
    })
}

/// Revokes a join token; back to the cluster page.
#[server(prefix = "/sfn", endpoint = "revoke_join_token")]
pub async fn revoke_join_token(id: String, token_id: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .clusters()
        .revoke_join_token(&actor, &id, &token_id)
        .await
        .map(drop);
    let page = format!("/clusters/{}", crate::query::form_escape(&id));
    crate::ssr::back(&page, result);
    Ok(())
}

#[component]
pub fn ClusterJoin() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let page = crate::hydrated::resource(id, join_page);
    let revoke = ServerAction::<RevokeJoinToken>::new();
    view! {
        <Title text="Add worker nodes" />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! {
                        <h1>"Add worker nodes to " {p.cluster_name.clone()}</h1>
                        <section class="card" aria-labelledby="join-heading">
                            <div class="card-head"><h2 id="join-heading">"Join command"</h2></div>
                            <p>"On each machine with kubeadm, a container runtime and the kubelet installed, run as root:"</p>
                            <pre id="join-command"><code>{p.join.command.clone()}</code></pre>
                            <p class="muted">
                                "The token lets machines join until " {to_minute(&p.join.expires_at)} " UTC. "
                                "It is shown again while it has an hour or more left; revoke it when your nodes have joined."
                            </p>
                            <ActionForm action=revoke>
                                <input type="hidden" name="id" value=id() />
                                <input type="hidden" name="token_id" value=p.join.token_id.clone() />
                                <button type="submit" class="danger" id="revoke-join-token">"Revoke this token"</button>
                            </ActionForm>
                            <FormError />
                        </section>
                        <section class="card" aria-labelledby="node-needs-heading" id="node-needs">
                            <div class="card-head"><h2 id="node-needs-heading">"What each node needs"</h2></div>
                            <ul>
                                <li><strong>"kubeadm and the kubelet"</strong>" of the cluster's Kubernetes version (or one minor version older), the kubelet ready to be started by your init system."</li>
                                <li><strong>"A container runtime"</strong>" with a CRI socket: containerd or CRI-O, with runc. Name its socket with "<code>"--cri-socket"</code>" if kubeadm does not find it."</li>
                                <li><strong>"CNI plugins"</strong>" (bridge, host-local, loopback; Debian: containernetworking-plugins) and a network configuration in /etc/cni/net.d, or a pod network addon."</li>
                                <li><strong>"A route to the API server"</strong>" at "<code>{p.join.endpoint.clone()}</code>", and the API server a route back to the kubelet (port 10250) for logs and exec."</li>
                                <li>"Swap off (or the kubelet told to accept it), and a unique host name: it becomes the node's name."</li>
                            </ul>
                            <p class="muted">"KQueen runs the control plane, scheduler included; kube-proxy and cluster DNS are not installed for you yet: add them as addons."</p>
                        </section>
                        <p><a href=format!("/clusters/{}", id())>"Back to the cluster"</a></p>
                    }.into_any(),
                    Err(e) => {
                        crate::not_found::status_for(&e);
                        view! {
                            <h1>"Add worker nodes"</h1>
                            <ErrorNote error=e />
                            <p><a href=format!("/clusters/{}", id())>"Back to the cluster"</a></p>
                        }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}
