//! A service of this machine's loopback (PostgreSQL, a fake) made reachable to the lab's
//! pods: connections to an address on the lab's bridge (its gateway, where pods reach the
//! host) are relayed to the service on 127.0.0.1. Nothing is exposed beyond the bridge.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};

/// Relays `<bridge address>:<port>` to a loopback service until dropped (its connections
/// too).
pub struct Relay {
    /// Where pods connect.
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Relay {
    /// Listens on `address` (the lab's gateway), any port, and relays to `target`.
    pub async fn start(address: &str, target: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind((address, 0)).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(serve(listener, move || async move { Some(target) }));
        Ok(Self { addr, task })
    }
}

/// Accepts connections on `listener` and pipes each to where `target` says (none: closed),
/// until aborted; the connections are the task's own, so they end with it.
pub(super) async fn serve<F, Fut>(listener: TcpListener, target: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<SocketAddr>>,
{
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((inbound, _)) = accepted else { break };
                let to = target().await;
                connections.spawn(pipe(inbound, to));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn pipe(mut inbound: TcpStream, target: Option<SocketAddr>) {
    if let Some(target) = target {
        if let Ok(mut outbound) = TcpStream::connect(target).await {
            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
        }
    }
}
