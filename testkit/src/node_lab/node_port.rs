//! What kube-proxy does for a NodePort Service, for the lab's node: kube-proxy is not among
//! `../shared/kube`'s binaries, so connections to `127.0.0.1:<nodePort>` are forwarded here,
//! as kube-proxy's userspace mode did, to a ready endpoint of the Service (a pod's address on
//! the lab's bridge and the endpoint's port), looked up in the cluster at each connection.
//! No endpoint ready: the connection is closed, as kube-proxy rejects it.

use k8s_openapi::api::core::v1::{Endpoints, Service};
use kube::Api;
use tokio::net::TcpListener;

/// Forwards `127.0.0.1:<node port>` until dropped.
pub struct NodePort {
    pub port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for NodePort {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl NodePort {
    /// Serves the node port of Service `namespace/name` whose node port is `port`.
    pub async fn forward(
        client: kube::Client,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let services: Api<Service> = Api::namespaced(client.clone(), namespace);
        let endpoints: Api<Endpoints> = Api::namespaced(client, namespace);
        let name = name.to_owned();
        let task = tokio::spawn(super::relay::serve(listener, move || {
            let (services, endpoints, name) = (services.clone(), endpoints.clone(), name.clone());
            async move { endpoint(&services, &endpoints, &name, port).await }
        }));
        Ok(Self { port, task })
    }
}

/// A ready address of the Service's endpoints with the port behind `node_port`.
async fn endpoint(
    services: &Api<Service>,
    endpoints: &Api<Endpoints>,
    name: &str,
    node_port: u16,
) -> Option<std::net::SocketAddr> {
    let service = services.get(name).await.ok()?;
    let port_name = service
        .spec?
        .ports?
        .into_iter()
        .find(|p| p.node_port == Some(i32::from(node_port)))?
        .name;
    let subsets = endpoints.get(name).await.ok()?.subsets?;
    subsets.into_iter().find_map(|subset| {
        let port = subset
            .ports?
            .into_iter()
            .find(|p| p.name == port_name)?
            .port;
        let address = subset.addresses?.into_iter().next()?;
        Some(std::net::SocketAddr::new(
            address.ip.parse().ok()?,
            u16::try_from(port).ok()?,
        ))
    })
}
