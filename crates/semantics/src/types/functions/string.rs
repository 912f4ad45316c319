//! The string functions: LEN, DATALENGTH, SUBSTRING, LEFT, RIGHT, UPPER, LOWER, LTRIM,
//! RTRIM, TRIM, REVERSE, REPLACE, REPLICATE, SPACE, CHARINDEX, PATINDEX, CONCAT,
//! CONCAT_WS, STR, CHAR, NCHAR, ASCII, UNICODE, STUFF, QUOTENAME and TRANSLATE.

use std::sync::Arc;
use tessera_errors::msg;

use super::super::compare::like;
use super::super::num::{self, f64_to_decimal};
use super::super::text::{cp1252_byte, decode_cp1252, find_ci, trim_trailing_spaces};
use super::super::typing::is_unicode;
use super::super::{SqlType, Value};
use super::{result_string, Call};
use tessera_errors::SqlResult;

impl Call<'_> {
    pub(super) fn string(&self) -> SqlResult<Value> {
        match self.name {
            // In UTF-16 code units, as SQL Server counts under a collation that is not
            // supplementary-character aware (a character outside the BMP counts 2).
            "LEN" => {
                let s = or_null!(self.text(0)?);
                Ok(Value::Int(trim_trailing_spaces(&s).encode_utf16().count() as i64))
            }
            "DATALENGTH" => Ok(datalength(&self.args[0], &self.types[0])),
            "SUBSTRING" => self.substring(),
            "LEFT" | "RIGHT" => {
                let s = or_null!(self.text(0)?);
                let n = or_null!(self.int(1)?);
                if n < 0 {
                    return Err(msg::INVALID_LENGTH_PARAMETER.with(&[&self.lower()]));
                }
                let chars: Vec<char> = s.chars().collect();
                let n = (n as usize).min(chars.len());
                let part: String = if self.name == "LEFT" {
                    chars[..n].iter().collect()
                } else {
                    chars[chars.len() - n..].iter().collect()
                };
                Ok(result_string(&part, self.result))
            }
            "UPPER" => Ok(result_string(&or_null!(self.text(0)?).to_uppercase(), self.result)),
            "LOWER" => Ok(result_string(&or_null!(self.text(0)?).to_lowercase(), self.result)),
            "LTRIM" => Ok(result_string(or_null!(self.text(0)?).trim_start_matches(' '), self.result)),
            "RTRIM" => Ok(result_string(or_null!(self.text(0)?).trim_end_matches(' '), self.result)),
            "TRIM" => Ok(result_string(or_null!(self.text(0)?).trim_matches(' '), self.result)),
            "REVERSE" => match &self.args[0] {
                Value::Binary(b) => Ok(Value::Binary(b.iter().rev().copied().collect())),
                _ => Ok(result_string(&or_null!(self.text(0)?).chars().rev().collect::<String>(), self.result)),
            },
            "TRANSLATE" => {
                let (s, from, to) = (or_null!(self.text(0)?), or_null!(self.text(1)?), or_null!(self.text(2)?));
                let (from, to): (Vec<char>, Vec<char>) = (from.chars().collect(), to.chars().collect());
                if from.len() != to.len() {
                    return Err(msg::TRANSLATE_LENGTHS_DIFFER.err());
                }
                let translated: String =
                    s.chars().map(|c| from.iter().position(|f| *f == c).map_or(c, |i| to[i])).collect();
                Ok(result_string(&translated, self.result))
            }
            "REPLACE" => {
                let (s, find, repl) = (or_null!(self.text(0)?), or_null!(self.text(1)?), or_null!(self.text(2)?));
                Ok(result_string(&replace_ci(&s, &find, &repl), self.result))
            }
            "REPLICATE" => {
                let s = or_null!(self.text(0)?);
                let n = or_null!(self.int(1)?);
                if n < 0 {
                    return Ok(Value::Null);
                }
                let limit = if self.result.is_max() { 1 << 30 } else { 8000 };
                let count = (n as usize).min(limit / s.chars().count().max(1) + 1);
                Ok(result_string(&s.repeat(count), self.result))
            }
            "SPACE" => {
                let n = or_null!(self.int(0)?);
                if n < 0 {
                    return Ok(Value::Null);
                }
                Ok(result_string(&" ".repeat((n as usize).min(8000)), self.result))
            }
            "CHARINDEX" => self.charindex(),
            "PATINDEX" => {
                let (pattern, s) = (or_null!(self.text(0)?), or_null!(self.text(1)?));
                Ok(Value::Int(patindex(&pattern, &s) as i64))
            }
            "CONCAT" => {
                let mut out = String::new();
                for i in 0..self.args.len() {
                    out.push_str(&self.text(i)?.unwrap_or_default());
                }
                Ok(result_string(&out, self.result))
            }
            "CONCAT_WS" => {
                let sep = self.text(0)?.unwrap_or_default();
                let parts: Vec<Arc<str>> = (1..self.args.len())
                    .map(|i| self.text(i))
                    .collect::<SqlResult<Vec<_>>>()?
                    .into_iter()
                    .flatten()
                    .collect();
                let joined = parts.iter().map(|p| &**p).collect::<Vec<&str>>().join(&sep);
                Ok(result_string(&joined, self.result))
            }
            "STR" => self.str(),
            "CHAR" => {
                let n = or_null!(self.int(0)?);
                let Ok(b) = u8::try_from(n) else { return Ok(Value::Null) };
                Ok(Value::str(&decode_cp1252(&[b])))
            }
            "NCHAR" => {
                let n = or_null!(self.int(0)?);
                let c = u32::try_from(n).ok().and_then(char::from_u32);
                Ok(c.map_or(Value::Null, |c| Value::str(c.encode_utf8(&mut [0; 4]))))
            }
            "ASCII" => {
                let s = or_null!(self.text(0)?);
                let c = or_null!(s.chars().next());
                Ok(Value::Int(i64::from(cp1252_byte(c).unwrap_or(b'?'))))
            }
            "UNICODE" => {
                let s = or_null!(self.text(0)?);
                let c = or_null!(s.chars().next());
                Ok(Value::Int(i64::from(u32::from(c))))
            }
            "STUFF" => self.stuff(),
            _ => self.quotename(),
        }
    }

    /// SUBSTRING's characters, 0-based `from..to` (before they meet the value's end); None
    /// for a NULL start or length.
    pub(super) fn substring_span(&self) -> SqlResult<Option<(u64, u64)>> {
        let (Some(start), Some(len)) = (self.int(1)?, self.int(2)?) else { return Ok(None) };
        if len < 0 {
            return Err(msg::INVALID_SUBSTRING_LENGTH.err());
        }
        // characters start..start+len (1-based)
        let from = start.max(1);
        let to = start.saturating_add(len).max(from);
        Ok(Some(((from - 1) as u64, (to - 1) as u64)))
    }

    fn substring(&self) -> SqlResult<Value> {
        let (from, to) = or_null!(self.substring_span()?);
        let (from, to) = (from as usize, to as usize);
        match &self.args[0] {
            Value::Null => Ok(Value::Null),
            Value::Binary(b) => {
                let (from, to) = (from.min(b.len()), to.min(b.len()));
                Ok(Value::Binary(Arc::from(&b[from..to])))
            }
            _ => {
                let s = or_null!(self.text(0)?);
                let part: String = s.chars().skip(from).take(to - from).collect();
                Ok(result_string(&part, self.result))
            }
        }
    }

    fn charindex(&self) -> SqlResult<Value> {
        let (find, s) = (or_null!(self.text(0)?), or_null!(self.text(1)?));
        let start = match self.args.get(2) {
            Some(_) => or_null!(self.int(2)?),
            None => 1,
        };
        let skip = (start.max(1) - 1) as usize;
        let from_byte = s.char_indices().nth(skip).map_or(s.len(), |(i, _)| i);
        let pos = find_ci(&s[from_byte..], &find).map_or(0, |b| skip + s[from_byte..][..b].chars().count() + 1);
        Ok(Value::Int(pos as i64))
    }

    fn str(&self) -> SqlResult<Value> {
        let x = or_null!(self.float(0)?);
        let len = match self.args.get(1) {
            Some(_) => or_null!(self.int(1)?),
            None => 10,
        };
        let dec = match self.args.get(2) {
            Some(_) => or_null!(self.int(2)?),
            None => 0,
        };
        if !(1..=8000).contains(&len) || dec < 0 {
            return Ok(Value::Null);
        }
        Ok(Value::str(&str_text(x, len as usize, dec.min(16) as usize)))
    }

    fn stuff(&self) -> SqlResult<Value> {
        let s = or_null!(self.text(0)?);
        let start = or_null!(self.int(1)?);
        let len = or_null!(self.int(2)?);
        let repl = self.text(3)?.unwrap_or_default();
        let chars: Vec<char> = s.chars().collect();
        if start < 1 || start as usize > chars.len() || len < 0 {
            return Ok(Value::Null);
        }
        let from = start as usize - 1;
        let to = from.saturating_add(len as usize).min(chars.len());
        let out: String =
            chars[..from].iter().chain(repl.chars().collect::<Vec<_>>().iter()).chain(chars[to..].iter()).collect();
        Ok(result_string(&out, self.result))
    }

    fn quotename(&self) -> SqlResult<Value> {
        let s = or_null!(self.text(0)?);
        let q = match self.args.get(1) {
            Some(_) => or_null!(self.text(1)?).chars().next().unwrap_or('['),
            None => '[',
        };
        let (open, close) = match q {
            '[' | ']' => ('[', ']'),
            '\'' => ('\'', '\''),
            '"' => ('"', '"'),
            '(' | ')' => ('(', ')'),
            '<' | '>' => ('<', '>'),
            '{' | '}' => ('{', '}'),
            '`' => ('`', '`'),
            _ => return Ok(Value::Null),
        };
        if s.chars().count() > 128 {
            return Ok(Value::Null);
        }
        let doubled = s.replace(close, &format!("{close}{close}"));
        Ok(Value::str(&format!("{open}{doubled}{close}")))
    }
}

/// DATALENGTH: bytes of the value as stored (varchar 1 per character, nvarchar 2 per
/// UTF-16 unit).
fn datalength(v: &Value, t: &SqlType) -> Value {
    let n = match v {
        Value::Null => return Value::Null,
        Value::Str(s) if is_unicode(t) => 2 * s.encode_utf16().count(),
        Value::Str(s) => s.chars().count(),
        Value::Binary(b) => b.len(),
        _ => t.fixed_size().unwrap_or(8),
    };
    Value::Int(n as i64)
}

/// REPLACE with the collation's case-insensitive matching.
fn replace_ci(s: &str, find: &str, repl: &str) -> String {
    if find.is_empty() {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = find_ci(rest, find) {
        out.push_str(&rest[..i]);
        out.push_str(repl);
        let matched: usize = rest[i..].chars().take(find.chars().count()).map(char::len_utf8).sum();
        rest = &rest[i + matched..];
    }
    out.push_str(rest);
    out
}

/// PATINDEX: 1-based position of the first match of a LIKE pattern, 0 if none.
fn patindex(pattern: &str, s: &str) -> usize {
    let (anchored, body) = match pattern.strip_prefix('%') {
        Some(rest) => (false, rest),
        None => (true, pattern),
    };
    for (n, (i, _)) in s.char_indices().enumerate() {
        if like(&s[i..], body, None) {
            return n + 1;
        }
        if anchored {
            break;
        }
    }
    0
}

/// STR's text: right-aligned in `len` characters with `dec` decimals, fewer decimals when
/// they do not fit, `*`s when the integer part does not.
fn str_text(x: f64, len: usize, dec: usize) -> String {
    for d in (0..=dec).rev() {
        let text = match f64_to_decimal(x, d as u8) {
            Some(v) => num::format_decimal(v, d as u8),
            None => format!("{x:.d$}"),
        };
        if text.len() <= len {
            return format!("{text:>len$}");
        }
    }
    "*".repeat(len)
}
