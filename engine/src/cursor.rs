//! Keyset cursors: opaque, signed, pinned to a commit.
//!
//! A cursor is base64url(payload) `.` base64url(HMAC-SHA256(payload) cut to
//! 16 bytes), keyed by the workspace's `cursor.key`. The payload carries the
//! format version, the query family, the pinned commit (32 bytes when it is
//! a sha256 hex id), 8 bytes of the digest of the normalized parameters
//! (without the limit) and the last row's sort key as JSON — binary, so a
//! next-page command stays short enough to read (about 150 characters; the
//! JSON payload of version 1 made them 400). Anything that does not verify,
//! or that was made for other parameters, is `STALE_CURSOR`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

use crate::error::{ErrorCode, FlameoxError, Result};
use crate::fsutil::digest_json;

const CURSOR_VERSION: u32 = 2;
/// Signature bytes kept (a 128-bit truncated HMAC).
const SIGNATURE_BYTES: usize = 16;
/// Parameter-digest bytes kept (the signature already binds them).
const PARAMS_BYTES: usize = 8;

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
        let bytes = pack(&CursorPayload {
            v: CURSOR_VERSION,
            family: family.to_owned(),
            commit: commit.to_owned(),
            params: params_digest(params),
            key,
        })?;
        let signature = self.mac(&bytes)?;
        Ok(format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&bytes),
            URL_SAFE_NO_PAD.encode(&signature[..SIGNATURE_BYTES])
        ))
    }

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
        mac.verify_truncated_left(&signature)
            .map_err(|_| stale("signature does not match"))?;
        if signature.len() != SIGNATURE_BYTES {
            return Err(stale("signature does not match"));
        }
        let payload =
            unpack(&bytes).ok_or_else(|| stale("malformed or made by another version"))?;
        if payload.family != family {
            return Err(stale("made for another query"));
        }
        if payload.params != params_digest(params) {
            return Err(stale("made for other parameters"));
        }
        Ok(payload)
    }
}

/// The kept part of the parameters' digest, as hex.
fn params_digest(params: &Value) -> String {
    digest_json(params).chars().take(PARAMS_BYTES * 2).collect()
}

/// `[version][family len][family][commit tag][commit][params][key JSON]`:
/// commit tag 0 is 32 raw bytes of a sha256 hex id, 1 a length-prefixed text.
fn pack(p: &CursorPayload) -> Result<Vec<u8>> {
    let too_long = || FlameoxError::internal("cursor field too long");
    let mut out = vec![u8::try_from(p.v).map_err(|_| too_long())?];
    out.push(u8::try_from(p.family.len()).map_err(|_| too_long())?);
    out.extend_from_slice(p.family.as_bytes());
    match hex::decode(&p.commit) {
        Ok(raw) if raw.len() == 32 => {
            out.push(0);
            out.extend_from_slice(&raw);
        }
        _ => {
            out.push(1);
            out.push(u8::try_from(p.commit.len()).map_err(|_| too_long())?);
            out.extend_from_slice(p.commit.as_bytes());
        }
    }
    let params = hex::decode(&p.params).map_err(|_| FlameoxError::internal("cursor digest"))?;
    out.extend_from_slice(&params);
    let key = serde_json::to_vec(&p.key)
        .map_err(|e| FlameoxError::internal(format!("encoding a cursor: {e}")))?;
    out.extend_from_slice(&key);
    Ok(out)
}

/// The payload of a verified cursor; `None` for another version or a
/// malformed body.
fn unpack(bytes: &[u8]) -> Option<CursorPayload> {
    let (&version, rest) = bytes.split_first()?;
    if u32::from(version) != CURSOR_VERSION {
        return None;
    }
    let (&family_len, rest) = rest.split_first()?;
    let (family, rest) = rest.split_at_checked(usize::from(family_len))?;
    let (&tag, rest) = rest.split_first()?;
    let (commit, rest) = match tag {
        0 => {
            let (raw, rest) = rest.split_at_checked(32)?;
            (hex::encode(raw), rest)
        }
        1 => {
            let (&len, rest) = rest.split_first()?;
            let (text, rest) = rest.split_at_checked(usize::from(len))?;
            (String::from_utf8(text.to_vec()).ok()?, rest)
        }
        _ => return None,
    };
    let (params, key) = rest.split_at_checked(PARAMS_BYTES)?;
    Some(CursorPayload {
        v: CURSOR_VERSION,
        family: String::from_utf8(family.to_vec()).ok()?,
        commit,
        params: hex::encode(params),
        key: serde_json::from_slice(key).ok()?,
    })
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

    #[test]
    fn a_cursor_pinned_to_a_real_commit_is_short() {
        let codec = CursorCodec::new(b"k".repeat(32));
        let commit = "09c3e2a5fb58".repeat(5) + "abcd";
        let params = json!({"target": "01a23f56-2020-774a-94e0-17c5df213813", "metric": null});
        let key = json!([1026608000, "f9a5de4e58c77202f7a661427e0ca3f9"]);
        let c = codec
            .encode("hotspots", &commit, &params, key.clone())
            .unwrap();
        assert!(c.len() <= 160, "{} characters: {c}", c.len());
        let p = codec.decode(&c, "hotspots", &params).unwrap();
        assert_eq!((p.commit, p.key), (commit, key));
        // A signature cut shorter than the kept length does not verify.
        let (body, sig) = c.split_once('.').unwrap();
        let short = format!("{body}.{}", &sig[..8]);
        assert!(codec.decode(&short, "hotspots", &params).is_err());
    }
}
