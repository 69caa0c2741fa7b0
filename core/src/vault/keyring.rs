//! Vault keys: which one seals, which ones still open.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::Path;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};

pub use crate::error::VaultError;

const PREFIX: &str = "kqv1";
const NONCE_LEN: usize = 24;

/// The vault's keys: the current one seals; all of them open.
pub struct Keyring {
    current: String,
    keys: HashMap<String, XChaCha20Poly1305>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids: Vec<_> = self.keys.keys().collect();
        ids.sort();
        f.debug_struct("Keyring")
            .field("current", &self.current)
            .field("ids", &ids)
            .finish()
    }
}

impl Keyring {
    /// Parses `id:base64key[,id:base64key…]`; the first key is current. Keys are 32 bytes
    /// (standard base64); ids are 1–32 of `a-z A-Z 0-9 _ -`.
    pub fn parse(spec: &str) -> Result<Self, VaultError> {
        let mut current = None;
        let mut keys = HashMap::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (id, key) = entry
                .split_once(':')
                .ok_or_else(|| VaultError::Spec("expected id:key".into()))?;
            if id.is_empty()
                || id.len() > 32
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(VaultError::Spec(format!(
                    "key id '{id}' is not 1-32 of a-z A-Z 0-9 _ -"
                )));
            }
            let bytes = STANDARD
                .decode(key.trim())
                .map_err(|_| VaultError::Spec(format!("key '{id}' is not base64")))?;
            if bytes.len() != 32 {
                return Err(VaultError::Spec(format!("key '{id}' must be 32 bytes")));
            }
            if keys
                .insert(
                    id.to_owned(),
                    XChaCha20Poly1305::new(Key::from_slice(&bytes)),
                )
                .is_some()
            {
                return Err(VaultError::Spec(format!("key id '{id}' appears twice")));
            }
            current.get_or_insert_with(|| id.to_owned());
        }
        let current = current.ok_or_else(|| VaultError::Spec("no key".into()))?;
        Ok(Self { current, keys })
    }

    /// A new key entry `id:base64key` with a random id and key.
    pub fn generate_entry() -> String {
        let key = XChaCha20Poly1305::generate_key(&mut OsRng);
        let id_bytes: [u8; 4] = rand_bytes();
        let id: String = id_bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("k{id}:{}", STANDARD.encode(key))
    }

    /// Reads the key file at `path`, creating it (mode 0600) with a new key when missing:
    /// the embedded default keeps its key in the data directory.
    pub fn load_or_create(path: &Path) -> Result<Self, VaultError> {
        let file_error = |e: std::io::Error| VaultError::File(format!("{}: {e}", path.display()));
        if !path.exists() {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(file_error)?;
            }
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(path).map_err(file_error)?;
            writeln!(file, "{}", Self::generate_entry()).map_err(file_error)?;
        }
        Self::parse(&std::fs::read_to_string(path).map_err(file_error)?)
    }

    pub fn current_id(&self) -> &str {
        &self.current
    }

    /// Seals `plaintext` under the current key, bound to `aad`.
    pub fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Result<String, VaultError> {
        let cipher = self
            .keys
            .get(&self.current)
            .ok_or_else(|| VaultError::UnknownKey(self.current.clone()))?;
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let ct = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad,
                },
            )
            .map_err(|_| VaultError::Open)?;
        let mut blob = nonce.to_vec();
        blob.extend_from_slice(&ct);
        Ok(format!(
            "{PREFIX}.{}.{}",
            self.current,
            URL_SAFE_NO_PAD.encode(blob)
        ))
    }

    /// Opens a sealed string bound to `aad`.
    pub fn open(&self, aad: &[u8], sealed: &str) -> Result<Vec<u8>, VaultError> {
        let mut parts = sealed.splitn(3, '.');
        let (Some(PREFIX), Some(id), Some(body)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(VaultError::Malformed);
        };
        let cipher = self
            .keys
            .get(id)
            .ok_or_else(|| VaultError::UnknownKey(id.to_owned()))?;
        let blob = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| VaultError::Malformed)?;
        if blob.len() < NONCE_LEN + 16 {
            return Err(VaultError::Malformed);
        }
        let (nonce, ct) = blob.split_at(NONCE_LEN);
        cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad })
            .map_err(|_| VaultError::Open)
    }

    /// True when `sealed` was sealed with the current key.
    pub fn is_current(&self, sealed: &str) -> bool {
        sealed.split('.').nth(1) == Some(self.current.as_str())
    }
}

fn rand_bytes<const N: usize>() -> [u8; N] {
    use chacha20poly1305::aead::rand_core::RngCore;
    let mut b = [0u8; N];
    OsRng.fill_bytes(&mut b);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_round_trip_and_fail_closed() {
        let a = Keyring::parse(&Keyring::generate_entry()).expect("parses");
        let sealed = a.seal(b"slot-1", b"kubeconfig").expect("seals");
        assert!(sealed.starts_with(&format!("kqv1.{}.", a.current_id())));
        assert_eq!(a.open(b"slot-1", &sealed).expect("opens"), b"kubeconfig");
        assert_ne!(
            a.seal(b"slot-1", b"kubeconfig").expect("seals"),
            sealed,
            "random nonce"
        );

        assert_eq!(
            a.open(b"slot-2", &sealed),
            Err(VaultError::Open),
            "moved to another slot"
        );
        // Flip one bit of every byte in turn (nonce, ciphertext and tag): each
        // must fail authentication. Re-encode so the change is real data, not
        // base64 padding bits (editing the last character can touch only those).
        let (head, body) = sealed.rsplit_once('.').expect("three parts");
        let blob = URL_SAFE_NO_PAD.decode(body).expect("base64");
        for i in 0..blob.len() {
            let mut bad = blob.clone();
            bad[i] ^= 0x01;
            let tampered = format!("{head}.{}", URL_SAFE_NO_PAD.encode(&bad));
            assert_eq!(
                a.open(b"slot-1", &tampered),
                Err(VaultError::Open),
                "tampered byte {i}"
            );
        }
        // Same key id, other key material: the wrong key fails closed.
        let id = a.current_id().to_owned();
        let other =
            Keyring::parse(&format!("{id}:{}", STANDARD.encode([7u8; 32]))).expect("parses");
        assert_eq!(other.open(b"slot-1", &sealed), Err(VaultError::Open));
        let unrelated = Keyring::parse(&Keyring::generate_entry()).expect("parses");
        assert!(matches!(
            unrelated.open(b"slot-1", &sealed),
            Err(VaultError::UnknownKey(_))
        ));
        for bad in [
            "",
            "kqv1",
            "kqv1.x",
            "kqv2.a.b",
            "kqv1.k.!!!",
            "kqv1.k.AAAA",
        ] {
            assert!(a.open(b"slot-1", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keyring_specs() {
        let (k1, k2) = (Keyring::generate_entry(), Keyring::generate_entry());
        let ring = Keyring::parse(&format!(" {k2} , {k1} ")).expect("two keys");
        assert_eq!(Some(ring.current_id()), k2.split(':').next());
        for bad in [
            "",
            "nokey",
            "id:not-base64!",
            &format!("x:{}", STANDARD.encode([1u8; 16])),
            &format!("{k1},{k1}"),
            "bad id!:AAAA",
        ] {
            assert!(Keyring::parse(bad).is_err(), "{bad}");
        }
        assert!(
            !format!("{ring:?}").contains(k1.split(':').nth(1).unwrap_or("x")),
            "Debug hides keys"
        );
    }

    #[test]
    fn key_file_is_created_once_and_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("keys/vault.key");
        let first = Keyring::load_or_create(&path).expect("created");
        let again = Keyring::load_or_create(&path).expect("read back");
        assert_eq!(first.current_id(), again.current_id());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path)
                .expect("metadata")
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o600);
        }
    }
}
