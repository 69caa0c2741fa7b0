//! Hosted control planes on one shared multi-tenant etcd (the Kamaji / Gardener design): the
//! building blocks of the `hosted` provisioner kind (`crate::provisioner::hosted` puts them
//! together per runtime): each control plane's PKI ([`pki`]), its key space, role and user
//! in the shared etcd ([`etcd`]), a copy of that key space at one revision and its loading
//! into another ([`dump`]), its files and command lines ([`control_plane`]), the
//! processes of the `process` runtime ([`supervisor`]) and what nodes need to join
//! ([`join`]).

pub mod control_plane;
pub mod dump;
pub mod etcd;
pub mod join;
pub mod pki;
pub mod supervisor;
