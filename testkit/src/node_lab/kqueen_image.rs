//! KQueen's own image, built offline in the layout of the repository's `Dockerfile` (no
//! registry is reachable here, so no base image either): the `kqueen` binary at
//! [`BINARY`], the site bundle at [`SITE`], user and group 10001 named in `/etc/passwd` and
//! `/etc/group`, the CA certificates, and the shared libraries the binary is linked
//! against (what `ldd` names: the C library, the loader, libgcc) instead of a distribution's
//! base layer. `make image-offline` writes it as an archive for `ctr images import` (the
//! `kqueen_image` example); the replica tests import it into the node lab.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::ImageSpec;

/// Where the binary is, in the image and the Dockerfile.
pub const BINARY: &str = "/usr/local/bin/kqueen";
/// Where the site bundle is (`KQUEEN_SITE_ROOT`).
pub const SITE: &str = "/usr/share/kqueen/site";
/// Where operations keep their files (`KQUEEN_DATA_DIR`, a volume in the manifests).
pub const DATA: &str = "/var/lib/kqueen";
/// The image's user and group: not root, as the `restricted` Pod Security level asks.
pub const UID: u32 = 10001;
/// The CA certificates (Debian's `ca-certificates` bundle) for providers' HTTPS.
pub const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The image of `binary` (a `kqueen` built for this machine) named `reference`, with the
/// files of `site` (a built site, or `public/` alone) when given.
pub fn spec(reference: &str, binary: &Path, site: Option<&Path>) -> std::io::Result<ImageSpec> {
    let binary_path = binary.display().to_string();
    let mut spec = ImageSpec::new(reference, &[BINARY])
        .file(&binary_path, BINARY)
        .user(&format!("{UID}:{UID}"))
        .env(&format!("KQUEEN_SITE_ROOT={SITE}"))
        .env(&format!("KQUEEN_DATA_DIR={DATA}"))
        .env("KQUEEN_LISTEN=0.0.0.0:3000")
        .data(
            "/etc/passwd",
            format!(
                "root:x:0:0:root:/root:/sbin/nologin\n\
                 kqueen:x:{UID}:{UID}:KQueen:{DATA}:/sbin/nologin\n"
            )
            .into_bytes(),
            0o644,
        )
        .data(
            "/etc/group",
            format!("root:x:0:\nkqueen:x:{UID}:\n").into_bytes(),
            0o644,
        );
    // Providers answer over HTTPS: an image without the bundle would fail them all.
    let bundle = std::fs::read(CA_BUNDLE).map_err(|e| {
        std::io::Error::other(format!(
            "{CA_BUNDLE}: {e} (install Debian's ca-certificates)"
        ))
    })?;
    spec = spec.data(CA_BUNDLE, bundle, 0o644);
    for library in shared_libraries(binary)? {
        let host = std::fs::canonicalize(&library)?;
        spec = spec.file(&host.display().to_string(), &library.display().to_string());
    }
    if let Some(site) = site {
        for (file, relative) in files_under(site)? {
            let path = format!("{SITE}/{}", relative.display());
            spec = spec.data(&path, std::fs::read(&file)?, 0o644);
        }
    }
    Ok(spec)
}

/// The shared libraries `binary` loads, the loader included, as `ldd` names them (paths as
/// the binary asks for them; their files may be links).
pub fn shared_libraries(binary: &Path) -> std::io::Result<Vec<PathBuf>> {
    let out = Command::new("ldd").arg(binary).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // glibc's ldd says so on stderr (exit 1) for a static binary, musl's on stdout.
    let said = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
    if said.contains("not a dynamic executable") || said.contains("statically linked") {
        return Ok(Vec::new());
    }
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "ldd {}: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    parse_ldd(&text)
}

fn parse_ldd(text: &str) -> std::io::Result<Vec<PathBuf>> {
    let mut libraries = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        // `name => /path (0x…)`, `/loader (0x…)`, or `linux-vdso.so.1 (0x…)` (in the kernel).
        let path = match line.split_once(" => ") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line
                .split_whitespace()
                .next()
                .filter(|p| p.starts_with('/')),
        };
        match path {
            Some(p) if p.starts_with('/') => libraries.push(PathBuf::from(p)),
            Some("not") => {
                return Err(std::io::Error::other(format!(
                    "a library is missing: {line}"
                )));
            }
            _ => {}
        }
    }
    Ok(libraries)
}

/// Every file under `root` (links followed), with its path relative to `root`.
fn files_under(root: &Path) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.is_file() {
                let relative = path
                    .strip_prefix(root)
                    .map_err(std::io::Error::other)?
                    .to_path_buf();
                found.push((path, relative));
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::parse_ldd;

    #[test]
    fn ldd_names_libraries_and_the_loader_not_the_vdso() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f1)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f3)\n";
        let found: Vec<String> = parse_ldd(text)
            .unwrap()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            found,
            [
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
        assert!(parse_ldd("\tlibfoo.so.1 => not found\n").is_err());
    }

    #[test]
    fn a_static_binary_needs_no_libraries() {
        // Debian's busybox-static, where installed (the node lab's images are made of it).
        let busybox = std::path::Path::new("/bin/busybox");
        let static_build = std::fs::read(busybox)
            .is_ok_and(|b| !b.windows(b"ld-linux".len()).any(|w| w == b"ld-linux"));
        if static_build {
            assert_eq!(
                super::shared_libraries(busybox).unwrap(),
                Vec::<std::path::PathBuf>::new()
            );
        }
    }
}
