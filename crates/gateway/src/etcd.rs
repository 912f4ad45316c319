//! A small etcd v3 client over etcd's JSON gateway (`POST /v3/kv/range`, `/v3/kv/txn`,
//! `/v3/lease/grant`, …: the gRPC API with JSON bodies, served on etcd's client port
//! since 3.4). It speaks HTTP/1.1 through hyper, which the server already links for
//! `/metrics`: a gRPC client would bring tonic and prost, and a `protoc` at build time on
//! every machine that builds tessera, for the handful of calls the directory makes.
//!
//! Keys and values are bytes, base64 in the JSON; 64-bit numbers come back as strings.
//! Each call is one request on a fresh connection, bounded by [`CALL_TIMEOUT`].

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

/// The most one call to etcd may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// What went wrong talking to etcd.
#[derive(Debug)]
pub struct EtcdError(pub String);

impl std::fmt::Display for EtcdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "etcd: {}", self.0)
    }
}

impl std::error::Error for EtcdError {}

pub type Result<T> = std::result::Result<T, EtcdError>;

/// A change a watch reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Put(KeyValue),
    Delete(Vec<u8>),
}

/// One key and its value as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    /// The lease the key is attached to (0: none).
    pub lease: i64,
}

/// An etcd cluster member's client endpoint (`host:port`).
#[derive(Debug, Clone)]
pub struct Etcd {
    endpoint: String,
}

fn number(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

fn decode(v: &Value) -> Result<Vec<u8>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => B64.decode(s).map_err(|e| EtcdError(format!("a value that is not base64: {e}"))),
        other => Err(EtcdError(format!("a value that is not a string: {other}"))),
    }
}

fn key_values(reply: &Value) -> Result<Vec<KeyValue>> {
    let Some(kvs) = reply.get("kvs").and_then(Value::as_array) else { return Ok(Vec::new()) };
    kvs.iter()
        .map(|kv| {
            Ok(KeyValue {
                key: decode(&kv["key"])?,
                value: decode(&kv["value"])?,
                lease: kv.get("lease").map_or(0, number),
            })
        })
        .collect()
}

/// The first key after every key that starts with `prefix` (etcd's `range_end` for a
/// prefix scan).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// A put inside a transaction (see [`Etcd::put_if_absent_or_ours`]).
fn put_op(key: &[u8], value: &[u8], lease: i64) -> Value {
    json!({ "requestPut": { "key": B64.encode(key), "value": B64.encode(value), "lease": lease.to_string() } })
}

impl Etcd {
    /// `endpoint` is `host:port` or `http://host:port`.
    pub fn new(endpoint: &str) -> Etcd {
        let endpoint = endpoint.trim_start_matches("http://").trim_end_matches('/').to_string();
        Etcd { endpoint }
    }

    /// POSTs `body` to `path` and returns the reply's body as it comes, once its status
    /// says success (an HTTP error is an error with etcd's message).
    async fn open(&self, path: &str, body: Value) -> Result<Incoming> {
        let tcp = tokio::net::TcpStream::connect(&self.endpoint)
            .await
            .map_err(|e| EtcdError(format!("cannot connect to {}: {e}", self.endpoint)))?;
        let _ = tcp.set_nodelay(true);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| EtcdError(format!("HTTP handshake with {}: {e}", self.endpoint)))?;
        tokio::spawn(conn);
        let request = hyper::Request::post(path)
            .header("host", &self.endpoint)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| EtcdError(e.to_string()))?;
        let reply = sender.send_request(request).await.map_err(|e| EtcdError(format!("{path}: {e}")))?;
        let status = reply.status();
        if status.is_success() {
            return Ok(reply.into_body());
        }
        let bytes = reply.into_body().collect().await.map_err(|e| EtcdError(format!("{path}: {e}")))?.to_bytes();
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let message = value.get("message").and_then(Value::as_str).unwrap_or("no message");
        Err(EtcdError(format!("{path}: {status}: {message}")))
    }

    /// POSTs `body` to `path` and returns the JSON reply.
    async fn call(&self, path: &str, body: Value) -> Result<Value> {
        let fut = async {
            let reply = self.open(path, body).await?;
            let bytes = reply.collect().await.map_err(|e| EtcdError(format!("{path}: {e}")))?.to_bytes();
            serde_json::from_slice::<Value>(&bytes).map_err(|e| {
                EtcdError(format!("{path}: a reply that is not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
            })
        };
        tokio::time::timeout(CALL_TIMEOUT, fut)
            .await
            .map_err(|_| EtcdError(format!("{path}: no reply from {} within {CALL_TIMEOUT:?}", self.endpoint)))?
    }

    /// The value of `key`, if it exists.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let reply = self.call("/v3/kv/range", json!({ "key": B64.encode(key) })).await?;
        Ok(key_values(&reply)?.into_iter().next().map(|kv| kv.value))
    }

    /// Every key that starts with `prefix`, in key order.
    pub async fn get_prefix(&self, prefix: &[u8]) -> Result<Vec<KeyValue>> {
        Ok(self.range_prefix(prefix).await?.0)
    }

    /// Every key that starts with `prefix`, and the store's revision they were read at (a
    /// watch from the next revision misses nothing).
    pub async fn range_prefix(&self, prefix: &[u8]) -> Result<(Vec<KeyValue>, i64)> {
        let body = json!({ "key": B64.encode(prefix), "range_end": B64.encode(prefix_end(prefix)) });
        let reply = self.call("/v3/kv/range", body).await?;
        Ok((key_values(&reply)?, reply["header"].get("revision").map_or(0, number)))
    }

    /// Follows every change to keys that start with `prefix` from `revision` on, handing
    /// each to `event`, until the stream ends or fails (the caller reads the range again
    /// and watches anew). A revision etcd has compacted away ends the watch at once.
    pub async fn watch_prefix(&self, prefix: &[u8], revision: i64, mut event: impl FnMut(Event)) -> Result<()> {
        let body = json!({ "create_request": {
            "key": B64.encode(prefix),
            "range_end": B64.encode(prefix_end(prefix)),
            "start_revision": revision.to_string(),
        }});
        let mut body = tokio::time::timeout(CALL_TIMEOUT, self.open("/v3/watch", body))
            .await
            .map_err(|_| EtcdError(format!("/v3/watch: no reply from {} within {CALL_TIMEOUT:?}", self.endpoint)))??;
        // The replies come as JSON objects one after another, split anywhere by the chunks.
        let mut pending: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| EtcdError(format!("/v3/watch: {e}")))?;
            let Some(data) = frame.data_ref() else { continue };
            pending.extend_from_slice(data);
            let mut stream = serde_json::Deserializer::from_slice(&pending).into_iter::<Value>();
            let mut used = 0;
            while let Some(next) = stream.next() {
                match next {
                    Ok(reply) => {
                        used = stream.byte_offset();
                        let result = reply.get("result").unwrap_or(&reply);
                        if result.get("canceled").and_then(Value::as_bool).unwrap_or(false)
                            || result.get("compact_revision").map_or(0, number) != 0
                        {
                            return Err(EtcdError(format!("/v3/watch ended by etcd: {result}")));
                        }
                        for e in result.get("events").and_then(Value::as_array).into_iter().flatten() {
                            let kv = &e["kv"];
                            let key = decode(&kv["key"])?;
                            event(match e.get("type").and_then(Value::as_str) {
                                Some("DELETE") => Event::Delete(key),
                                _ => Event::Put(KeyValue {
                                    key,
                                    value: decode(&kv["value"])?,
                                    lease: kv.get("lease").map_or(0, number),
                                }),
                            });
                        }
                    }
                    Err(e) if e.is_eof() => break,
                    Err(e) => return Err(EtcdError(format!("/v3/watch: a reply that is not JSON: {e}"))),
                }
            }
            pending.drain(..used);
        }
        Err(EtcdError("/v3/watch: the stream ended".to_string()))
    }

    /// Sets `key` to `value`, attached to `lease` (0: none).
    pub async fn put(&self, key: &[u8], value: &[u8], lease: i64) -> Result<()> {
        let body = json!({ "key": B64.encode(key), "value": B64.encode(value), "lease": lease.to_string() });
        self.call("/v3/kv/put", body).await.map(drop)
    }

    /// Sets `key` to `value` under `lease` in one transaction if the key does not exist
    /// or already has this value; otherwise leaves it. Returns the value the key has
    /// afterwards: `value` when this call set it or found it so.
    pub async fn put_if_absent_or_same(&self, key: &[u8], value: &[u8], lease: i64) -> Result<Vec<u8>> {
        let k = B64.encode(key);
        let body = json!({
            "compare": [{ "key": k, "result": "EQUAL", "target": "CREATE", "create_revision": "0" }],
            "success": [put_op(key, value, lease)],
            "failure": [{ "requestRange": { "key": k } }],
        });
        let reply = self.call("/v3/kv/txn", body).await?;
        if reply.get("succeeded").and_then(Value::as_bool).unwrap_or(false) {
            return Ok(value.to_vec());
        }
        let found = reply["responses"]
            .as_array()
            .and_then(|r| r.first())
            .map(|r| key_values(&r["response_range"]))
            .transpose()?
            .and_then(|kvs| kvs.into_iter().next());
        match found {
            // Ours already (a restart within the lease, or another lease of ours): take it
            // under the new lease.
            Some(kv) if kv.value == value => {
                if kv.lease != lease {
                    self.put(key, value, lease).await?;
                }
                Ok(value.to_vec())
            }
            Some(kv) => Ok(kv.value),
            // Deleted between the compare and the read: try again.
            None => Box::pin(self.put_if_absent_or_same(key, value, lease)).await,
        }
    }

    /// Deletes `key` if its value is `value` (a transaction): true if it did.
    pub async fn delete_if(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let k = B64.encode(key);
        let body = json!({
            "compare": [{ "key": k, "result": "EQUAL", "target": "VALUE", "value": B64.encode(value) }],
            "success": [{ "requestDeleteRange": { "key": k } }],
        });
        let reply = self.call("/v3/kv/txn", body).await?;
        Ok(reply.get("succeeded").and_then(Value::as_bool).unwrap_or(false))
    }

    /// Sets `key` to `value` under `lease` if its value is `expected` now (a
    /// transaction): true if it did.
    pub async fn replace_if(&self, key: &[u8], expected: &[u8], value: &[u8], lease: i64) -> Result<bool> {
        let body = json!({
            "compare": [{ "key": B64.encode(key), "result": "EQUAL", "target": "VALUE", "value": B64.encode(expected) }],
            "success": [put_op(key, value, lease)],
        });
        let reply = self.call("/v3/kv/txn", body).await?;
        Ok(reply.get("succeeded").and_then(Value::as_bool).unwrap_or(false))
    }

    /// A new lease of `ttl`: its id.
    pub async fn grant(&self, ttl: Duration) -> Result<i64> {
        let reply = self.call("/v3/lease/grant", json!({ "TTL": ttl.as_secs().max(1).to_string() })).await?;
        match reply.get("ID").map(number) {
            Some(id) if id != 0 => Ok(id),
            _ => Err(EtcdError(format!("lease grant without an id: {reply}"))),
        }
    }

    /// Renews `lease`; false if it has expired (its keys are gone).
    pub async fn keep_alive(&self, lease: i64) -> Result<bool> {
        let reply = self.call("/v3/lease/keepalive", json!({ "ID": lease.to_string() })).await?;
        Ok(reply.get("result").and_then(|r| r.get("TTL")).map(number).unwrap_or(0) > 0)
    }

    /// The keys attached to `lease` now (a key replaced under another lease is no longer
    /// among them); None if the lease has expired.
    pub async fn lease_keys(&self, lease: i64) -> Result<Option<Vec<Vec<u8>>>> {
        let reply = self.call("/v3/lease/timetolive", json!({ "ID": lease.to_string(), "keys": true })).await?;
        if reply.get("TTL").map_or(-1, number) <= 0 {
            return Ok(None);
        }
        let keys = reply.get("keys").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        keys.iter().map(decode).collect::<Result<Vec<_>>>().map(Some)
    }

    /// Ends `lease` now: its keys go at once.
    pub async fn revoke(&self, lease: i64) -> Result<()> {
        self.call("/v3/lease/revoke", json!({ "ID": lease.to_string() })).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_scan_ends_after_every_key_that_starts_with_it() {
        assert_eq!(prefix_end(b"/tessera/"), b"/tessera0".to_vec());
        assert_eq!(prefix_end(&[b'a', 0xFF]), b"b".to_vec());
        assert_eq!(prefix_end(&[0xFF]), vec![0]);
    }

    #[test]
    fn numbers_come_as_strings_or_numbers() {
        assert_eq!(number(&json!("7587869")), 7_587_869);
        assert_eq!(number(&json!(42)), 42);
        assert_eq!(number(&Value::Null), 0);
    }
}
