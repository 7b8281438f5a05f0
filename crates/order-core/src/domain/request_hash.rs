//! The identity of a request, for idempotency: HMAC-SHA256 of its canonical form under a secret
//! key (`REQUEST_HASH_KEY`).
//!
//! The canonical form is the parsed request in postcard's encoding (the fields in declaration
//! order, strings length-prefixed, integers as varints: one encoding per request, and no two
//! requests share one), streamed into the MAC without a buffer. It is about a third of the
//! request's JSON, so the hash costs a third of what hashing the JSON did (docs/benchmarks.md).
//! Keys stored before it hold the hash of the JSON form ([`RequestHashKey::json_hash`]);
//! [`crate::domain::contract::ValidOrder::is_same_request`] still recognises them, so a retry across the
//! upgrade is replayed, not refused.
//!
//! **Forms between releases.** A stored hash says which form it was computed over: 64 hex digits
//! untagged are the JSON form or postcard's (this release computes both), and any later form is
//! stored tagged, `<form>:<hex>` ([`stored_form`]), so that a release can tell a hash it cannot
//! compute from another request's: it answers 503 `idempotency_key_newer_release` (+
//! `Retry-After`) — never a replay it cannot verify, never `idempotency_key_reused` for what may
//! be the same request. A new form goes in over two releases, so that neighbouring releases
//! always compare in both directions: the first computes it beside the old one and still writes
//! the old, the second writes it. The hash of a fixed request under a fixed key is pinned by a
//! test (`the_canonical_form_is_pinned`): changing the form without that rule fails it.
//!
//! The canonical form holds the card number; a plain SHA-256 of it could be brute-forced from a
//! database dump (BIN and last four digits known, a few million candidates left). Keyed, the hash
//! reveals nothing without the key. The CVV is left out of the canonical form altogether: nothing
//! stored is derived from it. The key must be the same across restarts and instances, or a retry
//! after a restart would look like another request.

use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use sha2::Sha256;

use crate::plumbing::settings::{AppEnv, CommonSettings, DEVELOPMENT_HASH_KEY};

#[derive(Clone)]
pub struct RequestHashKey(Hmac<Sha256>);

/// The form a stored request hash was computed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredForm {
    /// Untagged: the JSON form or postcard's, both of which this release computes.
    Known,
    /// Tagged `<form>:<hex>`: a form a newer release writes, which this one cannot compute.
    Newer,
}

/// Which form `stored` (a key's `request_hash`) was computed over.
pub fn stored_form(stored: &str) -> StoredForm {
    if stored.contains(':') {
        StoredForm::Newer
    } else {
        StoredForm::Known
    }
}

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

    /// Hex HMAC-SHA256 of `value`'s postcard encoding: the canonical form of a request.
    pub fn hash_canonical(&self, value: &impl Serialize) -> String {
        let mac = postcard::serialize_with_flavor(value, IntoMac(self.0.clone()))
            .expect("postcard encodes plain structs of strings and integers");
        hex::encode(mac.finalize().into_bytes())
    }

    /// Hex HMAC-SHA256 of `value`'s JSON: the canonical form before postcard's, which keys
    /// reserved by earlier versions hold.
    pub fn json_hash(&self, value: &impl Serialize) -> String {
        self.hash(&serde_json::to_vec(value).expect("a parsed request always serialises"))
    }
}

impl std::fmt::Debug for RequestHashKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestHashKey(…)")
    }
}

/// postcard's output fed straight into the MAC.
struct IntoMac(Hmac<Sha256>);

impl postcard::ser_flavors::Flavor for IntoMac {
    type Output = Hmac<Sha256>;

    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.0.update(&[byte]);
        Ok(())
    }

    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        self.0.update(bytes);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<Self::Output> {
        Ok(self.0)
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
