//! A service of this machine's loopback (PostgreSQL, a fake) made reachable to the lab's
//! pods: connections to an address on the lab's bridge (its gateway, where pods reach the
//! host) are relayed to the service on 127.0.0.1. Nothing is exposed beyond the bridge.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};

/// Relays `<bridge address>:<port>` to a loopback service until dropped.
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
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Ok(Self { addr, task })
    }
}
