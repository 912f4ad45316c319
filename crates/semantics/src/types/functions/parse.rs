//! PARSE(text AS type [USING culture]) and TRY_PARSE: text read as .NET reads it in the
//! en-US culture (the default) or the invariant culture (`iv`, ''), into a number or a
//! date/time type. Numbers take leading and trailing white space and sign, a decimal
//! point and group separators (float: an exponent instead of groups; money: also the
//! currency symbol and parentheses for a negative amount); dates take what CAST takes in
//! month-day-year order, with month names, and a leading day name that must be the
//! date's. What does not read, or does not fit the type, is error 9819 for PARSE and NULL
//! for TRY_PARSE; another culture is 9818.

use super::super::convert::cast;
use super::super::datetime::{self, civil_from_days, weekday, DateOrder, WEEKDAYS};
use super::super::typing::{base_type_name, family, Family};
use super::{SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;

/// `text` as a value of `target`; `culture` as given (None: the session's, en-US).
pub(super) fn parse(text: &str, target: &SqlType, culture: Option<&str>, try_: bool) -> SqlResult<Value> {
    let currency = match culture.map(|c| c.trim().to_ascii_lowercase()) {
        None => "$",
        Some(c) if c == "en-us" || c == "en" => "$",
        Some(c) if c.is_empty() || c == "iv" => "\u{a4}",
        Some(_) => return Err(msg::FORMAT_CULTURE_NOT_SUPPORTED.with(&[&culture.unwrap_or_default()])),
    };
    let read = match family(target) {
        Family::Int | Family::Decimal | Family::Money | Family::Float => number(text, target, currency),
        Family::Date | Family::Time | Family::DateTime | Family::DateTime2 | Family::DateTimeOffset => {
            date(text, target)
        }
        _ => None,
    };
    match read {
        Some(v) => Ok(v),
        None if try_ => Ok(Value::Null),
        None => {
            // The message names decimal as numeric, as SQL Server's does.
            let name = match target {
                SqlType::Decimal { .. } => "numeric",
                other => base_type_name(other),
            };
            Err(msg::PARSE_FAILED.with(&[&text, &name, &culture.unwrap_or_default()]))
        }
    }
}

/// A number in .NET's NumberStyles for the type (Number; Float; Currency for money).
fn number(text: &str, target: &SqlType, currency: &str) -> Option<Value> {
    let fam = family(target);
    let mut s = text.trim().to_string();
    let mut negative = false;
    if fam == Family::Money {
        if let Some(inner) = s.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
            negative = true;
            s = inner.trim().to_string();
        }
    }
    let sign = |s: &mut String, negative: &mut bool| {
        if let Some(rest) = s.strip_prefix('-') {
            *negative = !*negative;
            *s = rest.trim_start().to_string();
        } else if let Some(rest) = s.strip_prefix('+') {
            *s = rest.trim_start().to_string();
        } else if let Some(rest) = s.strip_suffix('-') {
            *negative = !*negative;
            *s = rest.trim_end().to_string();
        } else if let Some(rest) = s.strip_suffix('+') {
            *s = rest.trim_end().to_string();
        }
    };
    sign(&mut s, &mut negative);
    if fam == Family::Money {
        if let Some(rest) = s.strip_prefix(currency).or_else(|| s.strip_suffix(currency)) {
            s = rest.trim().to_string();
            sign(&mut s, &mut negative);
        }
    }
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) if fam == Family::Float => (s[..i].to_string(), Some(s[i + 1..].to_string())),
        _ => (s.clone(), None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((&mantissa, ""));
    let grouped = int.contains(',');
    if grouped && fam == Family::Float {
        return None;
    }
    let int: String = int.chars().filter(|c| *c != ',').collect();
    let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(&int) || !digits(frac) || int.starts_with(',') {
        return None;
    }
    let exponent = match exponent {
        Some(e) => Some(e.parse::<i32>().ok()?),
        None => None,
    };
    // Integer types take a fraction of zeros only.
    let frac = if fam == Family::Int {
        if !frac.bytes().all(|b| b == b'0') {
            return None;
        }
        ""
    } else {
        frac
    };
    let int = if int.is_empty() { "0" } else { int.as_str() };
    let mut canonical = format!("{}{int}", if negative { "-" } else { "" });
    if !frac.is_empty() {
        canonical.push('.');
        canonical.push_str(frac);
    }
    if let Some(e) = exponent {
        canonical.push_str(&format!("E{e}"));
    }
    cast(&Value::str(&canonical), &SqlType::VarChar(8000), target, None).ok()
}

/// A date/time as CAST reads it (month-day-year), after a leading day name, which must
/// be the date's.
fn date(text: &str, target: &SqlType) -> Option<Value> {
    let t = text.trim();
    let (day_name, rest) = match WEEKDAYS.iter().position(|d| starts_with_word(t, d) || starts_with_word(t, &d[..3])) {
        Some(i) => {
            let name_len = t.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(t.len());
            (Some(i), t[name_len..].trim_start_matches([',', ' ']))
        }
        None => (None, t),
    };
    let (parsed, offset) = datetime::parse_with_offset(rest, DateOrder::Mdy)?;
    if let Some(expected) = day_name {
        if !parsed.has_date || weekday(parsed.days) as usize != expected {
            return None;
        }
    }
    let (y, m, d) = civil_from_days(parsed.days);
    let ticks = parsed.ticks;
    let (h, mi, s, f) = (ticks / 36_000_000_000, ticks / 600_000_000 % 60, ticks / 10_000_000 % 60, ticks % 10_000_000);
    let mut canonical = format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f:07}");
    if let Some(o) = offset {
        canonical.push_str(&datetime::format_offset(o));
    }
    let from = if offset.is_some() { SqlType::DateTimeOffset { scale: 7 } } else { SqlType::DateTime2 { scale: 7 } };
    let value = cast(&Value::str(&canonical), &SqlType::VarChar(100), &from, None).ok()?;
    cast(&value, &from, target, None).ok()
}

fn starts_with_word(text: &str, word: &str) -> bool {
    // `get`: the word's length may fall inside a character of the text.
    text.get(..word.len()).is_some_and(|head| head.eq_ignore_ascii_case(word))
        && text[word.len()..].chars().next().is_none_or(|c| !c.is_ascii_alphabetic())
}
