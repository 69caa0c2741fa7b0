//! Passwords (argon2id) and API tokens (random, stored as SHA-256). Nothing here logs or
//! formats a secret.

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::{Error, ValidationError};

/// Prefix of every API token, so that leaked tokens are recognisable by secret scanners.
pub const TOKEN_PREFIX: &str = "kq_";

/// Hashes a password with argon2id and a random salt (PHC string format).
pub fn hash_password(password: &str) -> Result<String, Error> {
    if password.chars().count() < 12 {
        return Err(ValidationError::new("password", "must be at least 12 characters").into());
    }
    if password.len() > 1024 {
        return Err(ValidationError::new("password", "must be at most 1024 bytes").into());
    }
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| Error::Corrupt(format!("password hashing failed: {e}")))
}

/// True when `password` matches the stored PHC hash.
pub fn verify_password(password: &str, hash: &str) -> bool {
    match PasswordHash::new(hash) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A new random secret of 32 bytes, base64url, with `prefix`.
pub fn random_secret(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// The stored form of a token: hex SHA-256. Tokens have 256 bits of entropy, so a fast hash
/// is enough (and lets a token be looked up by its hash).
pub fn token_hash(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_round_trip_and_fail_closed() {
        let h = hash_password("correct horse battery").expect("hash");
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse battery", &h));
        assert!(!verify_password("correct horse batterz", &h));
        assert!(!verify_password("correct horse battery", "not a hash"));
        assert!(hash_password("short").is_err());
    }

    #[test]
    fn tokens_are_random_and_hashed() {
        let (a, b) = (random_secret(TOKEN_PREFIX), random_secret(TOKEN_PREFIX));
        assert_ne!(a, b);
        assert!(a.starts_with("kq_") && a.len() == 3 + 43);
        assert_eq!(token_hash(&a).len(), 64);
        assert_eq!(token_hash(&a), token_hash(&a));
        assert_ne!(token_hash(&a), token_hash(&b));
    }
}
