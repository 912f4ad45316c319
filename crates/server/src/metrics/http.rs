//! The metrics listener: HTTP/1.1 by hyper on the server's runtime. `GET /metrics`
//! gathers a [`Snapshot`] on a blocking thread (it takes a few short locks) and answers
//! it in Prometheus' text format; `GET /api/summary` answers it as JSON for the dashboard,
//! `GET /` the dashboard's page. `HEAD` is `GET` without the body; another method gets
//! 405, another path 404. At most [`MAX_CONNECTIONS`] connections at once (more are closed at
//! accept), each with [`HEADER_TIMEOUT`] to send its request's head. The listener itself
//! ([`serve_pages`]) serves any set of pages: the gateway's too.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use super::collect::Snapshot;
use super::dashboard;
use crate::ServerState;

/// Scrapers and browsers connected at once, at most.
const MAX_CONNECTIONS: usize = 64;
/// Time a connection has to send a request's head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the server's pages on `listener` until `shutdown` turns true; open
/// connections are then dropped.
pub async fn serve(listener: TcpListener, state: Arc<ServerState>, shutdown: watch::Receiver<bool>) {
    serve_pages(listener, shutdown, move |path| {
        let state = state.clone();
        async move { page(state, &path).await }
    })
    .await
}

/// What a GET of a path answers: its status, content type and body.
pub type Page = (StatusCode, &'static str, String);

/// Serves `listener` until `shutdown` turns true, each GET or HEAD answered by `page`
/// (given the request's path); another method gets 405.
pub async fn serve_pages<F, Fut>(listener: TcpListener, mut shutdown: watch::Receiver<bool>, page: F)
where
    F: Fn(String) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Page> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            r = shutdown.changed() => {
                if r.is_err() || *shutdown.borrow() {
                    break;
                }
            }
            accepted = listener.accept() => {
                let Ok((tcp, _)) = accepted else {
                    // Out of descriptors and the like: the TDS listener logs those.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else { continue };
                let page = page.clone();
                connections.spawn(async move {
                    let service = service_fn(move |request| respond(page.clone(), request));
                    let _ = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT)
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                    drop(permit);
                });
                while connections.try_join_next().is_some() {}
            }
        }
    }
    connections.shutdown().await;
}

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Plain text, for answers that are not a page's own.
pub const TEXT: &str = "text/plain; charset=utf-8";

async fn respond<F, Fut>(page: F, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Page>,
{
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        let mut r = reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "GET or HEAD\n");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Ok(r);
    }
    let (status, content_type, body) = page(request.uri().path().to_string()).await;
    Ok(reply(status, content_type, body))
}

/// The server's pages.
async fn page(state: Arc<ServerState>, path: &str) -> Page {
    // What a path answers, gathered on a blocking thread.
    let (content_type, gather): (&'static str, fn(Snapshot) -> String) = match path {
        "/" => return (StatusCode::OK, "text/html; charset=utf-8", dashboard::PAGE.to_string()),
        "/metrics" => (prometheus_client::encoding::prometheus_text::CONTENT_TYPE, Snapshot::encode),
        "/api/summary" => ("application/json", |s| dashboard::summary(&s)),
        _ => return (StatusCode::NOT_FOUND, TEXT, "not found: try /metrics\n".to_string()),
    };
    match tokio::task::spawn_blocking(move || gather(Snapshot::take(&state))).await {
        Ok(body) => (StatusCode::OK, content_type, body),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, TEXT, format!("gathering the figures failed: {e}\n")),
    }
}
