//! Comparison under the default collation SQL_Latin1_General_CP1_CI_AS, and `LIKE`. The
//! keys that order as this compares (index, sort and grouping keys) are storage's form,
//! so the execution layer builds them (`tessera_execution::encoding::encode_key`) from
//! the pieces here: the collation's sort keys, a uniqueidentifier's byte order, binary
//! values without their trailing zeros.

use super::text::{char_in_range, chars_equal, collate_cmp};
use super::{num, Value};
use std::cmp::Ordering;

/// The order in which SQL Server compares the bytes of a uniqueidentifier: the last six
/// bytes first, then 8-9, 6-7, 4-5 and 0-3.
const GUID_ORDER: [usize; 16] = [10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3];

/// A uniqueidentifier's bytes in the order SQL Server compares them.
pub fn guid_key(g: &[u8; 16]) -> [u8; 16] {
    GUID_ORDER.map(|i| g[i])
}

/// A binary value without its trailing zero bytes, which comparison ignores.
pub fn strip_trailing_zeros(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
    &b[..end]
}

/// Compares two non-NULL values of one type family (the binder casts operands to a common
/// type first); `None` if either is NULL or they cannot be compared. Strings compare
/// case-insensitively, accent-sensitively and ignoring trailing spaces; binary values
/// ignore trailing zero bytes; numbers of different families compare by value.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    use Value as V;
    Some(match (a, b) {
        (V::Null, _) | (_, V::Null) => return None,
        (V::Bit(x), V::Bit(y)) => x.cmp(y),
        (V::Int(x), V::Int(y)) => x.cmp(y),
        (V::Float(x), V::Float(y)) => return x.partial_cmp(y),
        (V::Decimal { value: x, scale: sx }, V::Decimal { value: y, scale: sy }) => num::cmp(*x, *sx, *y, *sy),
        (V::Int(x), V::Decimal { value, scale }) => num::cmp(i128::from(*x), 0, *value, *scale),
        (V::Decimal { value, scale }, V::Int(y)) => num::cmp(*value, *scale, i128::from(*y), 0),
        (V::Int(_) | V::Decimal { .. } | V::Bit(_), V::Float(_))
        | (V::Float(_), V::Int(_) | V::Decimal { .. } | V::Bit(_)) => return as_f64(a)?.partial_cmp(&as_f64(b)?),
        (V::Bit(x), V::Int(y)) => i64::from(*x).cmp(y),
        (V::Int(x), V::Bit(y)) => x.cmp(&i64::from(*y)),
        (V::Str(x), V::Str(y)) => collate_cmp(x, y),
        (V::Binary(x), V::Binary(y)) => strip_trailing_zeros(x).cmp(strip_trailing_zeros(y)),
        (V::Date(x), V::Date(y)) => x.cmp(y),
        (V::Time(x), V::Time(y)) => x.cmp(y),
        (V::DateTime { days: d1, ticks: t1 }, V::DateTime { days: d2, ticks: t2 }) => (d1, t1).cmp(&(d2, t2)),
        (V::Date(d1), V::DateTime { days: d2, ticks: t2 }) => (*d1, 0).cmp(&(*d2, *t2)),
        (V::DateTime { days: d1, ticks: t1 }, V::Date(d2)) => (*d1, *t1).cmp(&(*d2, 0)),
        // datetimeoffset values compare by their UTC instant: the offset does not matter
        (V::DateTimeOffset { days: d1, ticks: t1, .. }, V::DateTimeOffset { days: d2, ticks: t2, .. }) => {
            (d1, t1).cmp(&(d2, t2))
        }
        (V::Guid(x), V::Guid(y)) => guid_key(x).cmp(&guid_key(y)),
        // Large values are compared read whole (one that cannot be read compares as
        // unknown, as NULL does).
        (V::Large(_), _) | (_, V::Large(_)) => return compare(&*a.whole().ok()?, &*b.whole().ok()?),
        _ => return None,
    })
}

fn as_f64(v: &Value) -> Option<f64> {
    Some(match v {
        Value::Bit(b) => f64::from(u8::from(*b)),
        Value::Int(i) => *i as f64,
        Value::Float(x) => *x,
        Value::Decimal { value, scale } => num::decimal_to_f64(*value, *scale),
        _ => return None,
    })
}

/// One element of a LIKE pattern.
#[derive(Debug)]
enum Token {
    /// `%`
    Any,
    /// `_`
    One,
    Literal(char),
    /// `[abc]`, `[a-z]`, `[^a]`: ranges as (low, high), single characters as (c, c).
    Set {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

impl Token {
    fn matches(&self, c: char) -> bool {
        match self {
            Token::Any | Token::One => true,
            Token::Literal(l) => chars_equal(*l, c),
            Token::Set { negated, items } => {
                let hit =
                    items.iter().any(|&(lo, hi)| if lo == hi { chars_equal(lo, c) } else { char_in_range(c, lo, hi) });
                hit != *negated
            }
        }
    }
}

fn parse_pattern(pattern: &str, escape: Option<char>) -> Vec<Token> {
    let p: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        let c = p[i];
        i += 1;
        if Some(c) == escape && i < p.len() {
            out.push(Token::Literal(p[i]));
            i += 1;
            continue;
        }
        match c {
            '%' => {
                if !matches!(out.last(), Some(Token::Any)) {
                    out.push(Token::Any);
                }
            }
            '_' => out.push(Token::One),
            '[' => match p[i..].iter().skip(1).position(|&x| x == ']') {
                Some(len) => {
                    let body = &p[i..i + len + 1];
                    i += len + 2;
                    out.push(parse_set(body));
                }
                None => out.push(Token::Literal('[')),
            },
            _ => out.push(Token::Literal(c)),
        }
    }
    out
}

fn parse_set(body: &[char]) -> Token {
    let (negated, body) = match body.split_first() {
        Some(('^', rest)) if !rest.is_empty() => (true, rest),
        _ => (false, body),
    };
    let mut items = Vec::new();
    let mut i = 0;
    while i < body.len() {
        if i + 2 < body.len() && body[i + 1] == '-' {
            items.push((body[i], body[i + 2]));
            i += 3;
        } else {
            items.push((body[i], body[i]));
            i += 1;
        }
    }
    Token::Set { negated, items }
}

/// `text LIKE pattern [ESCAPE escape]` under the default collation: `%`, `_`, `[abc]`,
/// `[a-z]`, `[^a]`, case-insensitive; trailing spaces of `text` are ignored, those of the
/// pattern are not (as SQL Server documents).
pub fn like(text: &str, pattern: &str, escape: Option<char>) -> bool {
    like_literals(text, pattern, escape).unwrap_or_else(|| like_general(text, pattern, escape))
}

/// The common case in one pass and without allocating: ASCII text, and an ASCII pattern
/// of literals, `_` and `%` (no `[`, ESCAPE, nor a space or `_` at its end). `None`: not
/// this case. The pattern's pieces between `%`s (each of a fixed length) are found in
/// order, leftmost first, case-insensitively (the collation folds ASCII as
/// `eq_ignore_ascii_case` does): the first must start the text and the last end it,
/// unless a `%` stands there. Trailing spaces of the text are ignored unless a final `%`
/// takes them anyway: a pattern ending in a literal that is not a space matches only up
/// to the text's last character that is not a space.
fn like_literals(text: &str, pattern: &str, escape: Option<char>) -> Option<bool> {
    let p = pattern.as_bytes();
    let &last = p.last()?;
    if escape.is_some() || last == b' ' || last == b'_' || !pattern.is_ascii() || !text.is_ascii() {
        return None;
    }
    if p.contains(&b'[') {
        return None;
    }
    let fits = |t: &[u8], piece: &[u8]| t.iter().zip(piece).all(|(&c, &q)| q == b'_' || c.eq_ignore_ascii_case(&q));
    let t = if last == b'%' { text } else { text.trim_end_matches(' ') }.as_bytes();
    let mut pieces = p.split(|&b| b == b'%');
    let first = pieces.next().expect("split yields one piece at least");
    let Some(end) = pieces.next_back() else {
        return Some(t.len() == first.len() && fits(t, first)); // no `%`
    };
    if t.len() < first.len() + end.len() || !fits(t, first) || !fits(&t[t.len() - end.len()..], end) {
        return Some(false);
    }
    let mut rest = &t[first.len()..t.len() - end.len()];
    for piece in pieces.filter(|piece| !piece.is_empty()) {
        match rest.windows(piece.len()).position(|w| fits(w, piece)) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return Some(false),
        }
    }
    Some(true)
}

/// LIKE for any text and pattern: a dynamic program over the pattern's tokens.
fn like_general(text: &str, pattern: &str, escape: Option<char>) -> bool {
    let tokens = parse_pattern(pattern, escape);
    let text: Vec<char> = text.chars().collect();
    let (n, m) = (text.len(), tokens.len());
    // next[j]: text[i+1..] matches tokens[j..]; cur[j]: text[i..] matches tokens[j..]
    let mut next = vec![false; m + 1];
    // i = n: only `%`s (and nothing) match the empty rest
    next[m] = true;
    for j in (0..m).rev() {
        next[j] = matches!(tokens[j], Token::Any) && next[j + 1];
    }
    let mut cur = vec![false; m + 1];
    let mut all_spaces = true;
    for i in (0..n).rev() {
        all_spaces &= text[i] == ' ';
        cur[m] = all_spaces;
        for j in (0..m).rev() {
            cur[j] = match &tokens[j] {
                Token::Any => cur[j + 1] || next[j],
                t => t.matches(text[i]) && next[j + 1],
            };
        }
        std::mem::swap(&mut cur, &mut next);
    }
    next[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    #[test]
    fn compares_like_sql_server() {
        assert_eq!(compare(&s("a"), &s("a  ")), Some(Ordering::Equal));
        assert_eq!(compare(&s("abc"), &s("ABC")), Some(Ordering::Equal));
        assert_eq!(compare(&s("a"), &s("b")), Some(Ordering::Less));
        assert_eq!(compare(&s("é"), &s("e")), Some(Ordering::Greater));
        assert_eq!(compare(&Value::Null, &s("e")), None);
        assert_eq!(compare(&Value::Int(3), &Value::Decimal { value: 30, scale: 1 }), Some(Ordering::Equal));
        assert_eq!(
            compare(&Value::Decimal { value: -15, scale: 1 }, &Value::Decimal { value: -149, scale: 2 }),
            Some(Ordering::Less)
        );
        assert_eq!(compare(&Value::Float(1.5), &Value::Int(1)), Some(Ordering::Greater));
        let g = |last: u8, first: u8| {
            let mut b = [0u8; 16];
            b[15] = last;
            b[0] = first;
            Value::Guid(b)
        };
        // the last bytes weigh most
        assert_eq!(compare(&g(1, 0), &g(0, 9)), Some(Ordering::Greater));
        assert_eq!(
            compare(&Value::Binary(Arc::from(&[1u8, 0][..])), &Value::Binary(Arc::from(&[1u8][..]))),
            Some(Ordering::Equal)
        );
    }

    #[test]
    fn like_patterns() {
        assert!(like("abc", "a%", None));
        assert!(like("ABC", "a_c", None));
        assert!(like("abc", "%", None));
        assert!(like("", "%", None));
        assert!(!like("", "_", None));
        assert!(like("b", "[a-c]", None));
        assert!(like("B", "[a-c]", None));
        assert!(!like("d", "[a-c]", None));
        assert!(like("d", "[^a-c]", None));
        assert!(like("x", "[xyz]", None));
        assert!(like("50%", "50[%]", None));
        assert!(like("50%", "50!%", Some('!')));
        assert!(!like("500", "50!%", Some('!')));
        assert!(like("abc  ", "abc", None));
        assert!(like("abc  ", "abc ", None));
        assert!(!like("abc", "abc ", None));
        assert!(like("a_b", "a\\_b", Some('\\')));
        assert!(like("hello world", "%o w%", None));
        assert!(!like("hello", "%x%", None));
        assert!(like("[", "[", None));
        assert!(!like("é", "e", None));
    }

    proptest! {
        #[test]
        fn like_s_fast_path_agrees_with_the_general_matcher(text in "[aAbB c%]{0,8}", pattern in "[aAbB c%_]{0,6}") {
            if let Some(fast) = like_literals(&text, &pattern, None) {
                prop_assert_eq!(fast, like_general(&text, &pattern, None), "{:?} LIKE {:?}", text, pattern);
            }
        }
    }
}
