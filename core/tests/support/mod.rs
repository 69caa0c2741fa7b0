//! Kubernetes helpers shared by the integration tests (`mod support;`): a fake API server
//! (`fake_kube`) and a real kube-apiserver harness (`apiserver`). Each test binary uses part
//! of them.
#![allow(dead_code, clippy::unwrap_used, clippy::print_stdout)]

#[allow(unused_imports)]
pub use kqueen_testkit::apiserver;
pub mod capi;
pub mod capi_world;
pub mod converge;
pub mod kube_client;
pub mod world;
#[allow(unused_imports)]
pub use kqueen_testkit::fake_kube;
