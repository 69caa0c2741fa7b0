//! A client from a kubeconfig a test was handed (an admin or a personal one).

use std::time::Duration;

/// A client for the kubeconfig `yaml`, each request within `timeout`.
pub async fn client_of(yaml: &[u8], timeout: Duration) -> kube::Client {
    let text = std::str::from_utf8(yaml).unwrap();
    let parsed = kqueen_core::kubernetes::parse_kubeconfig(text, None, false).unwrap();
    kqueen_core::kubernetes::client(&parsed, timeout)
        .await
        .unwrap()
}
