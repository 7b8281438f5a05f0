//! Answers that misbehave on request ([`BadAnswer`], `EndpointConfig::answer_fault`): what an
//! order API must survive from a dependency that is slow, broken or compromised, or from a proxy
//! in front of one. Each starts from the answer the endpoint would have given, its status and
//! body, and spoils it; the gateway spoils its answer after the charge is in the ledger, so that
//! the caller's "did it charge?" question is real.
//!
//! One body type serves all five, as an actix `MessageBody`: its size says whether the head
//! carries a `Content-Length` or a chunked body follows, and an error from it makes actix drop
//! the connection where it stands.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use actix_web::HttpResponse;
use actix_web::body::{BodySize, MessageBody};
use actix_web::http::header::ContentType;
use actix_web::web::Bytes;
use tokio::time::Sleep;

use crate::config::{BadAnswer, DRIP_EVERY, OVERSIZED_BYTES};

/// Each chunk of an endless body.
const ENDLESS_CHUNK: usize = 64 * 1024;
static PAD: [u8; ENDLESS_CHUNK] = [b'x'; ENDLESS_CHUNK];
/// How long a cut answer's first half is left to reach the client before the connection is
/// dropped (actix writes what it has before it waits; an error in the same turn would drop the
/// half too).
const CUT_AFTER: std::time::Duration = std::time::Duration::from_millis(50);

/// `response`, spoiled if a bad answer was drawn.
pub(crate) fn maybe(kind: Option<BadAnswer>, response: HttpResponse) -> HttpResponse {
    match kind {
        Some(kind) => spoil(kind, response),
        None => response,
    }
}

/// `response`, spoiled as `kind` says.
pub(crate) fn spoil(kind: BadAnswer, response: HttpResponse) -> HttpResponse {
    let status = response.status();
    let good = response.into_body().try_into_bytes().unwrap_or_default();
    let body = Spoiled {
        kind,
        good,
        sent: 0,
        wait: None,
    };
    HttpResponse::build(status)
        .content_type(ContentType::json())
        .body(body)
}

struct Spoiled {
    kind: BadAnswer,
    good: Bytes,
    /// Bytes of `good` sent (the endless body: chunks sent).
    sent: usize,
    /// The pause before the next byte of a drip, or before a cut answer is dropped.
    wait: Option<Pin<Box<Sleep>>>,
}

impl Spoiled {
    /// Waits out the pause set last, then sets the next one.
    fn pause(&mut self, cx: &mut Context<'_>, next: std::time::Duration) -> Poll<()> {
        if let Some(wait) = &mut self.wait {
            ready!(wait.as_mut().poll(cx));
        }
        self.wait = Some(Box::pin(tokio::time::sleep(next)));
        Poll::Ready(())
    }
}

fn dropped(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, what.to_owned())
}

impl MessageBody for Spoiled {
    type Error = std::io::Error;

    fn size(&self) -> BodySize {
        match self.kind {
            BadAnswer::Endless | BadAnswer::Drip => BodySize::Stream,
            BadAnswer::Oversized => BodySize::Sized(OVERSIZED_BYTES.max(self.good.len()) as u64),
            BadAnswer::Cut | BadAnswer::Reset => BodySize::Sized(self.good.len() as u64),
        }
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let this = self.get_mut();
        let next = match this.kind {
            BadAnswer::Endless => {
                this.sent += 1;
                let chunk = if this.sent == 1 {
                    Bytes::from_static(br#"{"pad":""#)
                } else {
                    Bytes::from_static(&PAD)
                };
                Some(Ok(chunk))
            }
            BadAnswer::Oversized if this.sent == 0 => {
                this.sent = this.good.len();
                let mut padded = this.good.to_vec();
                padded.resize(OVERSIZED_BYTES.max(padded.len()), b' ');
                Some(Ok(padded.into()))
            }
            BadAnswer::Oversized => None,
            BadAnswer::Drip if this.sent < this.good.len() => {
                ready!(this.pause(cx, DRIP_EVERY));
                this.sent += 1;
                Some(Ok(this.good.slice(this.sent - 1..this.sent)))
            }
            BadAnswer::Drip => None,
            BadAnswer::Cut if this.sent == 0 => {
                this.sent = (this.good.len() / 2).max(1).min(this.good.len());
                this.wait = Some(Box::pin(tokio::time::sleep(CUT_AFTER)));
                Some(Ok(this.good.slice(..this.sent)))
            }
            BadAnswer::Cut => {
                ready!(this.pause(cx, CUT_AFTER));
                Some(Err(dropped("answer cut (injected)")))
            }
            BadAnswer::Reset => Some(Err(dropped("connection dropped (injected)"))),
        };
        Poll::Ready(next)
    }
}
