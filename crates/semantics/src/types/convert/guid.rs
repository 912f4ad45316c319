//! uniqueidentifier: its text form both ways, and conversion to it.

use super::super::{SqlType, Value};
use super::binary::{hex, parse_hex};
use super::unexpected;
use tessera_errors::msg;
use tessera_errors::SqlResult;

/// The text of a uniqueidentifier, `6F9619FF-8B86-D011-B42D-00C04FC964FF`.
pub(crate) fn guid_text(g: &[u8; 16]) -> String {
    format!(
        "{:02X}{:02X}{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{}-{}",
        g[3],
        g[2],
        g[1],
        g[0],
        g[5],
        g[4],
        g[7],
        g[6],
        hex(&g[8..10]),
        hex(&g[10..])
    )
}

/// Parses `6F9619FF-8B86-D011-B42D-00C04FC964FF` (optionally in braces; characters past
/// the 36th are ignored, as SQL Server does).
fn parse_guid(s: &str) -> Option<[u8; 16]> {
    let t = s.strip_prefix('{').unwrap_or(s);
    let t = t.get(..36)?;
    let groups: Vec<&str> = t.split('-').collect();
    let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    if lens != [8, 4, 4, 4, 12] {
        return None;
    }
    let b = parse_hex(&groups.concat())?;
    if b.len() != 16 || !t.bytes().all(|c| c == b'-' || c.is_ascii_hexdigit()) {
        return None;
    }
    Some([b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]])
}

pub(super) fn to_guid(v: &Value, _from: &SqlType) -> SqlResult<Value> {
    match v {
        Value::Guid(g) => Ok(Value::Guid(*g)),
        Value::Str(s) => parse_guid(s).map(Value::Guid).ok_or_else(|| msg::INVALID_UNIQUEIDENTIFIER.err()),
        Value::Binary(b) => {
            let mut g = [0u8; 16];
            let n = b.len().min(16);
            g[..n].copy_from_slice(&b[..n]);
            Ok(Value::Guid(g))
        }
        _ => Err(unexpected(v, &SqlType::UniqueIdentifier)),
    }
}
