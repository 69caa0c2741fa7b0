//! Hosted control planes on one shared multi-tenant etcd (the Kamaji / Gardener design): the
//! building blocks of the `hosted` provisioner kind, which is being built in steps. So far:
//! each control plane's PKI ([`pki`]) and its key space, role and user in the shared etcd
//! ([`etcd`]).

pub mod control_plane;
pub mod etcd;
pub mod join;
pub mod pki;
pub mod supervisor;
