//! Keyset cursors: opaque, signed, pinned to a commit.
//!
//! A cursor is base64url(JSON payload) `.` base64url(HMAC-SHA256(payload)),
//! keyed by the workspace's `cursor.key`. The payload carries the schema
//! version, the query family, the pinned commit, a digest of the normalized
//! parameters (without the limit) and the last row's sort key. Anything that
//! does not verify, or that was made for other parameters, is `STALE_CURSOR`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::fsutil::digest_json;

const CURSOR_VERSION: u32 = 1;

/// What a cursor remembers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CursorPayload {
    pub v: u32,
    pub family: String,
    pub commit: String,
    pub params: String,
    /// The last row's sort key, tie-breaker included.
    pub key: Value,
}

/// Signs and checks cursors with one workspace key.
pub struct CursorCodec {
    key: Vec<u8>,
}

impl CursorCodec {
    pub fn new(key: Vec<u8>) -> CursorCodec {
        CursorCodec { key }
    }

    fn mac(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key)
            .map_err(|_| FlameoxError::internal("cursor key unusable"))?;
        mac.update(bytes);
        Ok(mac.finalize().into_bytes().to_vec())
    }

    /// Encodes the position after `key` for a family, commit and parameters.
    pub fn encode(&self, family: &str, commit: &str, params: &Value, key: Value) -> Result<String> {
        let payload = CursorPayload {
            v: CURSOR_VERSION,
            family: family.to_owned(),
            commit: commit.to_owned(),
            params: digest_json(params),
            key,
        };
        let bytes = serde_json::to_vec(&payload)
            .map_err(|e| FlameoxError::internal(format!("encoding a cursor: {e}")))?;
        let signature = self.mac(&bytes)?;
        Ok(format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&bytes),
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }

    /// Verifies a cursor for `family` and `params`; returns its payload (the
    /// caller pins `payload.commit`).
    pub fn decode(&self, cursor: &str, family: &str, params: &Value) -> Result<CursorPayload> {
        let stale = |why: &str| {
            FlameoxError::new(
                ErrorCode::StaleCursor,
                format!("the cursor is not valid here: {why}"),
            )
            .remedy("repeat the call without a cursor to start paging again")
        };
        let (body, signature) = cursor.split_once('.').ok_or_else(|| stale("malformed"))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| stale("malformed"))?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| stale("malformed"))?;
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key)
            .map_err(|_| FlameoxError::internal("cursor key unusable"))?;
        mac.update(&bytes);
        mac.verify_slice(&signature)
            .map_err(|_| stale("signature does not match"))?;
        let payload: CursorPayload =
            serde_json::from_slice(&bytes).map_err(|_| stale("malformed"))?;
        if payload.v != CURSOR_VERSION {
            return Err(stale("made by another cursor version"));
        }
        if payload.family != family {
            return Err(stale("made for another query"));
        }
        if payload.params != digest_json(params) {
            return Err(stale("made for other parameters"));
        }
        Ok(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_and_every_kind_of_tampering_is_stale() {
        let codec = CursorCodec::new(b"k".repeat(32));
        let params = json!({"artifact": "a", "start": 0});
        let c = codec
            .encode("trace_window", "c0", &params, json!([5, 7]))
            .unwrap();
        let p = codec.decode(&c, "trace_window", &params).unwrap();
        assert_eq!(p.key, json!([5, 7]));
        assert_eq!(p.commit, "c0");

        let mut flipped = c.clone().into_bytes();
        flipped[3] = if flipped[3] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        for bad in [flipped.as_str(), "nonsense", "a.b"] {
            assert_eq!(
                codec.decode(bad, "trace_window", &params).unwrap_err().code,
                ErrorCode::StaleCursor
            );
        }
        assert!(codec.decode(&c, "hotspots", &params).is_err());
        assert!(
            codec
                .decode(&c, "trace_window", &json!({"artifact": "b"}))
                .is_err()
        );
        let other = CursorCodec::new(b"x".repeat(32));
        assert!(other.decode(&c, "trace_window", &params).is_err());
    }
}
