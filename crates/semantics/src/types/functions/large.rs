//! The string functions that read a large value ([`Value::Large`]) only where they need
//! it: DATALENGTH its length, LEN back from its end to the last character that is not a
//! space, SUBSTRING, LEFT and RIGHT the characters they return, CHARINDEX up to the first
//! match. Every other function, and these with other arguments large too, gets the value
//! read whole (`call_function`).

use tessera_errors::{msg, SqlResult};

use super::super::large::PIECE_BYTES;
use super::super::text::{decode_cp1252, find_ci};
use super::super::Value;
use super::super::{LargeKind, LargeValue};
use super::{result_string, Call};

impl Call<'_> {
    /// The function's value when it reads its large argument in place; None when it
    /// needs the argument whole.
    pub(super) fn on_large(&self) -> SqlResult<Option<Value>> {
        // The value the function reads: CHARINDEX's second argument, the others' first.
        let at = usize::from(self.name == "CHARINDEX");
        let Some(Value::Large(l)) = self.args.get(at) else { return Ok(None) };
        if self.args.iter().enumerate().any(|(j, a)| j != at && matches!(a, Value::Large(_))) {
            return Ok(None);
        }
        let unicode_or_text = l.kind() != LargeKind::Binary;
        Ok(Some(match self.name {
            "DATALENGTH" => Value::Int(l.len_bytes() as i64),
            "LEN" if unicode_or_text => Value::Int(l.trimmed_len_units()? as i64),
            "SUBSTRING" => {
                let (from, to) = or_null_value!(self.substring_span()?);
                self.fit(l.slice(from, to - from)?)
            }
            "LEFT" | "RIGHT" if unicode_or_text => {
                let n = or_null_value!(self.int(1)?);
                if n < 0 {
                    return Err(msg::INVALID_LENGTH_PARAMETER.with(&[&self.lower()]));
                }
                let n = (n as u64).min(l.len_units());
                let first = if self.name == "LEFT" { 0 } else { l.len_units() - n };
                self.fit(l.slice(first, n)?)
            }
            "CHARINDEX" if unicode_or_text => {
                let find = or_null_value!(self.text(0)?);
                let start = match self.args.get(2) {
                    Some(_) => or_null_value!(self.int(2)?),
                    None => 1,
                };
                Value::Int(charindex(l, &find, (start.max(1) - 1) as u64)? as i64)
            }
            _ => return Ok(None),
        }))
    }

    fn fit(&self, v: Value) -> Value {
        match v {
            Value::Str(s) => result_string(&s, self.result),
            v => v,
        }
    }
}

/// `text LIKE pattern` (no ESCAPE) for a large text value, reading only what the pattern
/// needs: `literal%` its first characters, `%literal%` up to the first match (the
/// literals without wildcards). None for any other pattern (the caller reads the value
/// whole) and for binary values.
pub fn like_in_place(l: &LargeValue, pattern: &str) -> SqlResult<Option<bool>> {
    if l.kind() == LargeKind::Binary {
        return Ok(None);
    }
    let literal = |p: &str| !p.is_empty() && !p.contains(['%', '_', '[']);
    if let Some(prefix) = pattern.strip_suffix('%').filter(|p| literal(p)) {
        // Characters of one UTF-16 unit each: the first `n` units are the first `n`
        // characters the pattern compares (a longer character there never equals one).
        if prefix.chars().any(|c| c.len_utf16() > 1) {
            return Ok(None);
        }
        let n = prefix.chars().count();
        let Value::Str(head) = l.slice(0, n as u64)? else { return Ok(None) };
        let text = super::super::text::chars_equal;
        return Ok(Some(head.chars().count() == n && head.chars().zip(prefix.chars()).all(|(a, b)| text(a, b))));
    }
    if let Some(inner) = pattern.strip_prefix('%').and_then(|p| p.strip_suffix('%')).filter(|p| literal(p)) {
        return Ok(Some(charindex(l, inner, 0)? > 0));
    }
    Ok(None)
}

/// Like `or_null!`, inside a function whose result is `Option<Value>`.
macro_rules! or_null_value {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return Ok(Some(Value::Null)),
        }
    };
}
use or_null_value;

/// CHARINDEX of `find` in the text `l` from character `skip` on (0-based): the 1-based
/// position of the first match, 0 for none. Reads the text in pieces, each searched
/// together with the end of the one before that a match could start in.
fn charindex(l: &LargeValue, find: &str, skip: u64) -> SqlResult<u64> {
    let needle = find.chars().count();
    if needle == 0 {
        return Ok(0);
    }
    let unit = l.kind().unit_bytes();
    let mut at = skip.saturating_mul(unit).min(l.len_bytes());
    // Characters before `tail`, and the text kept from the piece before (fewer characters
    // than the needle, so any match in it runs into the new piece).
    let mut counted = skip;
    let mut tail = String::new();
    let mut buf = vec![0u8; PIECE_BYTES];
    while at < l.len_bytes() {
        let mut n = (l.len_bytes() - at).min(buf.len() as u64) as usize;
        l.read(at, &mut buf[..n])?;
        if l.kind() == LargeKind::Unicode && at + (n as u64) < l.len_bytes() {
            // A piece ends between the halves of a surrogate pair: the high half waits.
            if (0xD800..0xDC00).contains(&u16::from_le_bytes([buf[n - 2], buf[n - 1]])) {
                n -= 2;
            }
        }
        let text = match l.kind() {
            LargeKind::Unicode => {
                let units = buf[..n].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
                char::decode_utf16(units).map(|c| c.unwrap_or('\u{FFFD}')).collect::<String>()
            }
            _ => decode_cp1252(&buf[..n]).into_owned(),
        };
        tail.push_str(&text);
        if let Some(b) = find_ci(&tail, find) {
            return Ok(counted + tail[..b].chars().count() as u64 + 1);
        }
        // Keep the last needle - 1 characters: a match may start there.
        let total = tail.chars().count();
        let keep = total.min(needle - 1);
        let cut = tail.char_indices().nth(total - keep).map_or(tail.len(), |(i, _)| i);
        counted += (total - keep) as u64;
        tail = tail.split_off(cut);
        at += n as u64;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::large::tests::large;
    use crate::types::{call_function, FunctionContext, SqlType};

    fn unicode(s: &str) -> Value {
        let b: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        Value::Large(large(LargeKind::Unicode, b))
    }

    fn call(name: &str, args: &[Value]) -> Value {
        let max = SqlType::NVarChar(tessera_types::MAX);
        let types: Vec<SqlType> =
            args.iter().map(|a| if matches!(a, Value::Int(_)) { SqlType::Int } else { max }).collect();
        let result = crate::types::function_type(name, &types).unwrap().unwrap();
        call_function(name, args, &types, &result, &mut FunctionContext::default()).unwrap()
    }

    /// Each function on a large value gives what it gives on the same text whole.
    #[test]
    fn large_values_answer_as_whole_ones() {
        // Longer than two pieces, a match across the first boundary, trailing spaces.
        let piece_chars = PIECE_BYTES / 2;
        let mut text = "x".repeat(piece_chars - 2);
        text.push_str("NeedLe");
        text.push_str(&"y".repeat(piece_chars));
        text.push_str("tail  ");
        let (big, whole) = (unicode(&text), Value::str(&text));
        let i = |n: i64| Value::Int(n);
        let cases: Vec<(&str, Vec<Value>)> = vec![
            ("DATALENGTH", vec![]),
            ("LEN", vec![]),
            ("SUBSTRING", vec![i(piece_chars as i64 - 3), i(10)]),
            ("SUBSTRING", vec![i(-5), i(8)]),
            ("SUBSTRING", vec![i(3 * piece_chars as i64), i(8)]),
            ("LEFT", vec![i(4)]),
            ("RIGHT", vec![i(7)]),
            ("RIGHT", vec![i(10 * piece_chars as i64)]),
        ];
        for (name, rest) in cases {
            let with = |v: &Value| [vec![v.clone()], rest.clone()].concat();
            assert_eq!(call(name, &with(&big)), call(name, &with(&whole)), "{name} {rest:?}");
        }
        for (find, start) in [("needle", 1), ("tail", 1), ("needle", piece_chars as i64), ("absent", 1), ("", 1)] {
            let args = |v: &Value| vec![Value::str(find), v.clone(), i(start)];
            assert_eq!(call("CHARINDEX", &args(&big)), call("CHARINDEX", &args(&whole)), "{find} from {start}");
        }
        // A character of two UTF-16 units across the end of a piece is found whole.
        let mut text = "y".repeat(piece_chars - 1);
        text.push_str("😀t");
        let args = |v: &Value| vec![Value::str("😀T"), v.clone()];
        assert_eq!(call("CHARINDEX", &args(&unicode(&text))), i(piece_chars as i64));
        assert_eq!(call("CHARINDEX", &args(&Value::str(&text))), i(piece_chars as i64));
        assert_eq!(call("UPPER", &[unicode("abc")]), Value::str("ABC"));
        let Value::Large(l) = unicode(&format!("Début{}fin", "x".repeat(PIECE_BYTES))) else { unreachable!() };
        for (pattern, whole) in
            [("début%", true), ("Début!%", false), ("%XFIN%", true), ("%nope%", false), ("D_but%", true)]
        {
            let text = format!("Début{}fin", "x".repeat(PIECE_BYTES));
            let expected = crate::types::like(&text, pattern, None);
            assert_eq!(expected, whole, "{pattern}");
            match like_in_place(&l, pattern).unwrap() {
                Some(got) => assert_eq!(got, expected, "{pattern}"),
                None => assert!(pattern.contains('_'), "{pattern} read in place"),
            }
        }
        assert_eq!(like_in_place(&l, "%").unwrap(), None);
    }
}
