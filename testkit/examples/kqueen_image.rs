//! Writes KQueen's image as an OCI archive without a container builder or a registry (the
//! layout of the repository's Dockerfile; see `node_lab::kqueen_image`):
//!
//!     cargo run -p kqueen-testkit --example kqueen_image -- OUT.tar [BINARY] [SITE] [REFERENCE]
//!
//! BINARY defaults to `target/serve/kqueen`, SITE to `target/site`, REFERENCE to
//! `kqueen:latest`. Import it with `ctr -n k8s.io images import OUT.tar` on each node.
#![allow(clippy::print_stdout)]

use std::path::Path;

use kqueen_testkit::node_lab::image::write_archive;
use kqueen_testkit::node_lab::kqueen_image;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out) = args.first() else {
        eprintln!("usage: kqueen_image OUT.tar [BINARY] [SITE] [REFERENCE]");
        return std::process::ExitCode::from(2);
    };
    let binary = args.get(1).map_or("target/serve/kqueen", String::as_str);
    let site = args.get(2).map_or("target/site", String::as_str);
    let reference = args.get(3).map_or("kqueen:latest", String::as_str);
    let site = Path::new(site);
    if !site.join("pkg").is_dir() {
        eprintln!(
            "{}: no built site (pkg/ missing): run `make site` first",
            site.display()
        );
        return std::process::ExitCode::FAILURE;
    }
    let written = kqueen_image::spec(reference, Path::new(binary), Some(site))
        .and_then(|spec| write_archive(&spec, Path::new(out)));
    match written {
        Ok(digest) => {
            println!("{out}: {reference} {digest}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kqueen_image: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
