//! The identity of a request, for idempotency: HMAC-SHA256 of its canonical form under a secret
//! key (`REQUEST_HASH_KEY`).
//!
//! The canonical form holds the card number; a plain SHA-256 of it could be brute-forced from a
//! database dump (BIN and last four digits known, a few million candidates left). Keyed, the hash
//! reveals nothing without the key. The CVV is left out of the canonical form altogether: nothing
//! stored is derived from it. The key must be the same across restarts and instances, or a retry
//! after a restart would look like another request.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::settings::{AppEnv, CommonSettings, DEVELOPMENT_HASH_KEY};

#[derive(Clone)]
pub struct RequestHashKey(Hmac<Sha256>);

impl RequestHashKey {
    /// The key from the settings: the one [`CommonSettings::chosen_hash_key`] chooses, or its
    /// refusal.
    pub fn from_settings(settings: &CommonSettings) -> anyhow::Result<Self> {
        Ok(Self::new(settings.chosen_hash_key()?.as_bytes()))
    }

    /// The development key (`APP_ENV=development`), e.g. for tests that compute a stored hash.
    pub fn development() -> Self {
        Self::new(DEVELOPMENT_HASH_KEY.as_bytes())
    }

    pub fn new(key: &[u8]) -> Self {
        RequestHashKey(Hmac::new_from_slice(key).expect("HMAC takes keys of any length"))
    }

    /// Hex HMAC-SHA256 of `canonical`.
    pub fn hash(&self, canonical: &[u8]) -> String {
        let mut mac = self.0.clone();
        mac.update(canonical);
        hex::encode(mac.finalize().into_bytes())
    }
}

/// Logs the development key's use once at start-up.
pub fn warn_if_development(settings: &CommonSettings) {
    if settings.app_env == AppEnv::Development {
        tracing::warn!("APP_ENV=development: request hashes use a public key; never in production");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_hash_depends_on_the_key() {
        let a = RequestHashKey::new(b"0123456789abcdef");
        let b = RequestHashKey::new(b"fedcba9876543210");
        assert_eq!(a.hash(b"x"), a.hash(b"x"));
        assert_ne!(a.hash(b"x"), b.hash(b"x"));
        assert_ne!(a.hash(b"x"), a.hash(b"y"));
        assert_eq!(a.hash(b"x").len(), 64);
    }

    #[test]
    fn production_needs_a_real_key() {
        let mut s = CommonSettings::new("postgres://x", "http://y");
        s.app_env = AppEnv::Production;
        let err = RequestHashKey::from_settings(&s).err().unwrap().to_string();
        assert!(err.contains("REQUEST_HASH_KEY"), "{err}");
        s.request_hash_key = Some("short".into());
        assert!(RequestHashKey::from_settings(&s).is_err());
        s.request_hash_key = Some("a-long-enough-secret".into());
        assert!(RequestHashKey::from_settings(&s).is_ok());
        s.app_env = AppEnv::Development;
        s.request_hash_key = None;
        assert!(RequestHashKey::from_settings(&s).is_ok());
    }

    #[test]
    fn a_short_key_is_refused_in_every_environment() {
        for env in [AppEnv::Production, AppEnv::Development] {
            let mut s = CommonSettings::new("postgres://x", "http://y");
            s.app_env = env;
            s.request_hash_key = Some("fifteen-bytes-k".into());
            let err = RequestHashKey::from_settings(&s).err().unwrap().to_string();
            assert!(err.contains("at least 16 bytes"), "{env:?}: {err}");
            s.request_hash_key = Some("sixteen-bytes-ky".into());
            assert!(RequestHashKey::from_settings(&s).is_ok(), "{env:?}");
        }
    }

    #[test]
    fn the_public_key_only_in_development_with_no_key_given() {
        let public = RequestHashKey::development().hash(b"x");
        let mut s = CommonSettings::new("postgres://x", "http://y");
        s.app_env = AppEnv::Development;
        assert_eq!(
            RequestHashKey::from_settings(&s).unwrap().hash(b"x"),
            public
        );
        s.request_hash_key = Some("a-long-enough-secret".into());
        let given = RequestHashKey::from_settings(&s).unwrap().hash(b"x");
        assert_eq!(
            given,
            RequestHashKey::new(b"a-long-enough-secret").hash(b"x")
        );
        s.app_env = AppEnv::Production;
        assert_eq!(RequestHashKey::from_settings(&s).unwrap().hash(b"x"), given);
    }

    #[test]
    fn short_lease_is_refused_with_the_reason() {
        let mut s = CommonSettings::new("postgres://x", "http://y");
        s.deps_timeout_ms = 10_000;
        s.db_pool_timeout_ms = 5000;
        s.lease_ms = 24_999;
        let err = s.check().unwrap_err().to_string();
        assert!(
            err.contains("LEASE_MS=24999") && err.contains("25000"),
            "{err}"
        );
        s.lease_ms = 25_000;
        s.check().unwrap();
    }
}
