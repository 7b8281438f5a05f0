//! The server's lifecycle, read by the routes (`/ready`, the draining answer in `http`) and by
//! [`close_while_draining`], and set by the server when a shutdown signal arrives; its own module
//! so that neither imports the other.

use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::ConnectionType;
use actix_web::middleware::Next;
use actix_web::web;

/// Whether the server is draining: set when SIGTERM or SIGINT arrives, after which `/ready`
/// answers 503 so that a load balancer stops sending before the listener closes.
#[derive(Debug, Default)]
pub struct Lifecycle {
    draining: AtomicBool,
}

impl Lifecycle {
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }
}

/// Middleware: once the server drains, every response says `Connection: close` and actix closes
/// the connection after it. A kept-alive client (a proxy's pool, a service's HTTP client) then
/// opens its next connection through the load balancer, which by then routes elsewhere, instead
/// of sending it here after the listener closed and meeting a reset. Read when the response is
/// ready, so an order in flight at the signal is told too.
pub async fn close_while_draining(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let lifecycle = req.app_data::<web::Data<Lifecycle>>().cloned();
    let mut response = next.call(req).await?;
    if lifecycle.is_some_and(|l| l.draining()) {
        response
            .response_mut()
            .head_mut()
            .set_connection_type(ConnectionType::Close);
    }
    Ok(response)
}
