//! A dependency's answer is untrusted input: a seller, risk or payment service (or a proxy in
//! front of one) can be slow, broken or compromised. Every client of both APIs reads an answer
//! under the same rules, stated here once:
//!
//! - its body is never buffered past [`DEPS_ANSWER_MAX_BYTES`], whether it has a `Content-Length`
//!   (refused before a byte of the body is read, [`check_length`]) or is chunked (refused at the
//!   first chunk that passes the bound, [`BoundedBody`]);
//! - a `200`, the one status whose body is read as JSON, says `application/json`
//!   ([`check_content_type`]);
//! - the whole answer, not each read, is bounded by the call's timeout (`DEPS_TIMEOUT_MS`, or the
//!   request's remaining deadline): each client's total timeout, see `plumbing::deps_client`.
//!
//! An answer that breaks one of them ends the call as a failed dependency does
//! (`dependency_unavailable`), with an [`AnswerFault`] in the error's cause that says which rule,
//! for the metrics and the one log line (`plumbing::deps_client::settle`).

/// The largest dependency answer body either API reads, bytes. The largest valid answer is the
/// gateway's lookup or void (`GatewayPayment` with the key echoed): a key of the longest seller
/// id (64) and reference id, each character JSON-escaped at worst (`\u00XX`, 6 bytes), is under
/// 1 KiB, and every other answer is under 100 bytes. 8 KiB leaves room for fields a gateway may
/// add and is ureq's connection buffer (`BUFFER_BYTES` in blocking-api), so a valid answer is one
/// read, while an endless answer costs a call at most this much memory.
pub const DEPS_ANSWER_MAX_BYTES: usize = 8 * 1024;

/// Why an answer was refused; its [`AnswerFault::as_str`] is the `reason` label of
/// `dependency_answers_refused_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AnswerFault {
    #[error("answer body over {DEPS_ANSWER_MAX_BYTES} bytes")]
    TooLarge,
    #[error("answer cut short (connection closed or reset in the body)")]
    CutShort,
    #[error("answer body not whole within the call's timeout")]
    TimedOut,
    #[error("answer body not the JSON expected")]
    Malformed,
    #[error("answer not application/json")]
    ContentType,
}

impl AnswerFault {
    pub const ALL: [AnswerFault; 5] = [
        AnswerFault::TooLarge,
        AnswerFault::CutShort,
        AnswerFault::TimedOut,
        AnswerFault::Malformed,
        AnswerFault::ContentType,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AnswerFault::TooLarge => "too_large",
            AnswerFault::CutShort => "cut_short",
            AnswerFault::TimedOut => "timed_out",
            AnswerFault::Malformed => "malformed",
            AnswerFault::ContentType => "content_type",
        }
    }

    /// The fault an error is, or was given as its context, if any.
    pub fn of(error: &anyhow::Error) -> Option<AnswerFault> {
        error.downcast_ref::<AnswerFault>().copied()
    }
}

/// Refuses an answer whose `Content-Length` is over the bound, before its body is read.
pub fn check_length(content_length: Option<u64>) -> Result<(), AnswerFault> {
    match content_length {
        Some(n) if n > DEPS_ANSWER_MAX_BYTES as u64 => Err(AnswerFault::TooLarge),
        _ => Ok(()),
    }
}

/// Refuses a `200` that is not JSON: its body would be parsed as JSON by `deps`. Other statuses'
/// bodies are not read for meaning (a proxy's HTML 502 is a 502), so any type passes.
pub fn check_content_type(status: u16, content_type: Option<&str>) -> Result<(), AnswerFault> {
    let essence = content_type
        .and_then(|v| v.split(';').next())
        .map(str::trim);
    match (status, essence) {
        (200, Some(e)) if e.eq_ignore_ascii_case("application/json") => Ok(()),
        (200, _) => Err(AnswerFault::ContentType),
        _ => Ok(()),
    }
}

/// An answer's body as it arrives, never grown past [`DEPS_ANSWER_MAX_BYTES`].
#[derive(Debug, Default)]
pub struct BoundedBody(Vec<u8>);

impl BoundedBody {
    /// Appends a chunk, or refuses it if the body would pass the bound (nothing is kept of it).
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), AnswerFault> {
        if self.0.len() + chunk.len() > DEPS_ANSWER_MAX_BYTES {
            return Err(AnswerFault::TooLarge);
        }
        self.0.extend_from_slice(chunk);
        Ok(())
    }

    pub fn into_vec(self) -> Vec<u8> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_kept_up_to_the_bound_and_refused_past_it() {
        let mut body = BoundedBody::default();
        body.push(&[b' '; DEPS_ANSWER_MAX_BYTES - 1]).unwrap();
        body.push(b"x").unwrap();
        assert_eq!(body.push(b"y"), Err(AnswerFault::TooLarge));
        assert_eq!(body.into_vec().len(), DEPS_ANSWER_MAX_BYTES);
    }

    #[test]
    fn a_content_length_over_the_bound_is_refused_before_reading() {
        assert_eq!(check_length(None), Ok(()));
        assert_eq!(check_length(Some(DEPS_ANSWER_MAX_BYTES as u64)), Ok(()));
        let over = Some(DEPS_ANSWER_MAX_BYTES as u64 + 1);
        assert_eq!(check_length(over), Err(AnswerFault::TooLarge));
    }

    #[test]
    fn only_a_200_must_be_json() {
        for ok in ["application/json", "Application/JSON; charset=utf-8"] {
            assert_eq!(check_content_type(200, Some(ok)), Ok(()), "{ok}");
        }
        for bad in [None, Some("text/html"), Some("application/jsonx")] {
            assert_eq!(
                check_content_type(200, bad),
                Err(AnswerFault::ContentType),
                "{bad:?}"
            );
        }
        assert_eq!(check_content_type(502, Some("text/html")), Ok(()));
        assert_eq!(check_content_type(401, None), Ok(()));
    }

    #[test]
    fn a_fault_is_found_under_context() {
        let error = anyhow::Error::from(AnswerFault::CutShort).context("reading the answer");
        assert_eq!(AnswerFault::of(&error), Some(AnswerFault::CutShort));
        let parse = serde_json::from_slice::<u8>(b"{").unwrap_err();
        let error = anyhow::Error::new(parse).context(AnswerFault::Malformed);
        assert_eq!(AnswerFault::of(&error), Some(AnswerFault::Malformed));
        assert_eq!(AnswerFault::of(&anyhow::anyhow!("refused")), None);
    }
}
