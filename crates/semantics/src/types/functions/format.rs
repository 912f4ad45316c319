//! FORMAT(value, format [, culture]): the .NET Framework format strings SQL Server hands
//! its values to — standard and custom numeric formats for the number types, standard
//! and custom date and time formats for date, datetime, datetime2, smalldatetime and
//! datetimeoffset, TimeSpan formats for time — in the cultures en-US (the us_english
//! session's, and the default) and the invariant culture (`iv`, or ''). Another culture
//! is error 9818. A format .NET would refuse (FormatException) gives NULL, as in SQL
//! Server.
//!
//! Numbers are formatted from their exact decimal digits (a float from its 15 significant
//! digits, as .NET Framework does); rounding is half away from zero.

use super::super::datetime::{
    civil_from_days, weekday, MONTHS, TICKS_PER_HOUR, TICKS_PER_MINUTE, TICKS_PER_SECOND, WEEKDAYS,
};
use super::{SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;

/// The parts of a culture FORMAT uses.
struct Culture {
    currency: &'static str,
    short_date: &'static str,
    long_date: &'static str,
    short_time: &'static str,
    long_time: &'static str,
    month_day: &'static str,
    year_month: &'static str,
}

const EN_US: Culture = Culture {
    currency: "$",
    short_date: "M/d/yyyy",
    long_date: "dddd, MMMM d, yyyy",
    short_time: "h:mm tt",
    long_time: "h:mm:ss tt",
    month_day: "MMMM d",
    year_month: "MMMM yyyy",
};

const INVARIANT: Culture = Culture {
    currency: "\u{a4}",
    short_date: "MM/dd/yyyy",
    long_date: "dddd, dd MMMM yyyy",
    short_time: "HH:mm",
    long_time: "HH:mm:ss",
    month_day: "MMMM dd",
    year_month: "yyyy MMMM",
};

/// FORMAT's value: NULL for a NULL argument or a format .NET refuses.
pub(super) fn format(value: &Value, ty: &SqlType, pattern: &str, culture: Option<&str>) -> SqlResult<Value> {
    let culture = match culture.map(|c| c.trim().to_ascii_lowercase()) {
        None => &EN_US,
        Some(c) if c == "en-us" || c == "en" => &EN_US,
        Some(c) if c.is_empty() || c == "iv" => &INVARIANT,
        Some(_) => {
            return Err(msg::FORMAT_CULTURE_NOT_SUPPORTED.with(&[&culture.unwrap_or_default()]));
        }
    };
    let text = match value {
        Value::Null => None,
        Value::Int(_) | Value::Decimal { .. } | Value::Float(_) => {
            Number::of(value).and_then(|n| format_number(&n, value, ty, pattern, culture))
        }
        Value::Date(days) => format_datetime(*days, 0, None, pattern, culture),
        Value::DateTime { days, ticks } => format_datetime(*days, *ticks, None, pattern, culture),
        Value::DateTimeOffset { days, ticks, offset } => {
            let (days, ticks) = super::super::datetime::shift_minutes(*days, *ticks, i32::from(*offset));
            format_datetime(days, ticks, Some(*offset), pattern, culture)
        }
        Value::Time(ticks) => format_timespan(*ticks, pattern),
        _ => None,
    };
    Ok(text.map_or(Value::Null, |t| Value::str(&t)))
}

// ---- numbers ------------------------------------------------------------------------

/// A number as exact decimal digits: sign, integer digits (no leading zeros, "" for
/// zero) and fraction digits.
#[derive(Clone, Debug)]
struct Number {
    negative: bool,
    int: String,
    frac: String,
}

impl Number {
    fn of(v: &Value) -> Option<Number> {
        let (negative, digits, scale) = match v {
            Value::Int(i) => (*i < 0, i.unsigned_abs().to_string(), 0usize),
            Value::Decimal { value, scale } => (*value < 0, value.unsigned_abs().to_string(), usize::from(*scale)),
            Value::Float(f) if f.is_finite() => {
                // 15 significant digits, as .NET Framework formats a double.
                let s = format!("{:.14e}", f.abs());
                let (mantissa, exp) = s.split_once('e')?;
                let exp: i64 = exp.parse().ok()?;
                let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
                let scale = 14 - exp;
                if scale >= 0 {
                    (*f < 0.0, digits, scale as usize)
                } else {
                    (*f < 0.0, format!("{digits}{}", "0".repeat((-scale) as usize)), 0)
                }
            }
            _ => return None,
        };
        let padded = format!("{}{digits}", "0".repeat((scale + 1).saturating_sub(digits.len())));
        let (int, frac) = padded.split_at(padded.len() - scale);
        let int = int.trim_start_matches('0').to_string();
        let frac = frac.to_string();
        Some(Number { negative, int, frac }.normalized())
    }

    fn normalized(mut self) -> Number {
        if self.is_zero() {
            self.negative = false;
        }
        self
    }

    fn is_zero(&self) -> bool {
        self.int.is_empty() && self.frac.bytes().all(|b| b == b'0')
    }

    /// Rounded (half away from zero) to `places` fraction digits, exactly that many.
    fn round(&self, places: usize) -> Number {
        if self.frac.len() <= places {
            let frac = format!("{:0<places$}", self.frac);
            return Number { negative: self.negative, int: self.int.clone(), frac };
        }
        let up = self.frac.as_bytes()[places] >= b'5';
        let mut digits: Vec<u8> = format!("{}{}", self.int, &self.frac[..places]).into_bytes();
        if up {
            let mut i = digits.len();
            loop {
                if i == 0 {
                    digits.insert(0, b'1');
                    break;
                }
                i -= 1;
                if digits[i] == b'9' {
                    digits[i] = b'0';
                } else {
                    digits[i] += 1;
                    break;
                }
            }
        }
        let s = String::from_utf8(digits).expect("digits");
        let (int, frac) = s.split_at(s.len() - places);
        Number { negative: self.negative, int: int.trim_start_matches('0').to_string(), frac: frac.to_string() }
            .normalized()
    }

    /// × 10^n (n ≥ 0).
    fn shifted(&self, n: usize) -> Number {
        let frac = format!("{:0<n$}", self.frac);
        let int = format!("{}{}", self.int, &frac[..n]).trim_start_matches('0').to_string();
        Number { negative: self.negative, int, frac: frac[n..].to_string() }
    }

    /// ÷ 10^n.
    fn unshifted(&self, n: usize) -> Number {
        let int = format!("{:0>n$}", self.int);
        let (i, moved) = int.split_at(int.len() - n);
        Number {
            negative: self.negative,
            int: i.trim_start_matches('0').to_string(),
            frac: format!("{moved}{}", self.frac),
        }
    }

    /// The significant digits and the decimal exponent of the first one (0.0123 → "123", -2).
    fn significant(&self) -> (String, i64) {
        let all = format!("{}{}", self.int, self.frac);
        let lead = all.len() - all.trim_start_matches('0').len();
        let digits = all.trim_start_matches('0').trim_end_matches('0').to_string();
        (digits, self.int.len() as i64 - 1 - lead as i64)
    }
}

/// Digits with a comma between each group of three ("" stays "").
fn group(digits: &str) -> String {
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn fixed(n: &Number, grouped: bool) -> String {
    let int = if n.int.is_empty() { "0".to_string() } else { n.int.clone() };
    let int = if grouped { group(&int) } else { int };
    if n.frac.is_empty() {
        int
    } else {
        format!("{int}.{}", n.frac)
    }
}

fn signed(n: &Number, body: String) -> String {
    if n.negative {
        format!("-{body}")
    } else {
        body
    }
}

fn format_number(n: &Number, v: &Value, ty: &SqlType, pattern: &str, c: &Culture) -> Option<String> {
    let mut chars = pattern.chars();
    let first = chars.next()?;
    let rest = chars.as_str();
    let standard = first.is_ascii_alphabetic() && rest.len() <= 2 && rest.bytes().all(|b| b.is_ascii_digit());
    if !standard {
        return custom_number(n, pattern);
    }
    let precision: Option<usize> = if rest.is_empty() { None } else { rest.parse().ok() };
    let integral = matches!(v, Value::Int(_));
    Some(match first.to_ascii_uppercase() {
        'C' => {
            let r = n.round(precision.unwrap_or(2));
            let body = format!("{}{}", c.currency, fixed(&r, true));
            if r.negative {
                format!("({body})")
            } else {
                body
            }
        }
        'D' if integral => {
            let digits = if n.int.is_empty() { "0".to_string() } else { n.int.clone() };
            signed(n, format!("{:0>width$}", digits, width = precision.unwrap_or(0)))
        }
        'E' => {
            let places = precision.unwrap_or(6);
            let (digits, exp) = n.significant();
            let (mantissa, exp) = if digits.is_empty() {
                (Number { negative: false, int: String::new(), frac: String::new() }.round(places), 0)
            } else {
                let m = Number { negative: n.negative, int: digits[..1].to_string(), frac: digits[1..].to_string() };
                let r = m.round(places);
                // Rounding up to 10.0… moves the exponent.
                if r.int.len() > 1 {
                    (r.unshifted(1).round(places), exp + 1)
                } else {
                    (r, exp)
                }
            };
            let e = if first == 'e' { 'e' } else { 'E' };
            let sign = if exp < 0 { '-' } else { '+' };
            signed(&mantissa, format!("{}{e}{sign}{:03}", fixed(&mantissa, false), exp.abs()))
        }
        'F' => {
            let r = n.round(precision.unwrap_or(2));
            signed(&r, fixed(&r, false))
        }
        'N' => {
            let r = n.round(precision.unwrap_or(2));
            signed(&r, fixed(&r, true))
        }
        'P' => {
            let r = n.shifted(2).round(precision.unwrap_or(2));
            signed(&r, format!("{} %", fixed(&r, true)))
        }
        'G' | 'R' => general(n, v, precision, first.is_ascii_lowercase()),
        'X' if integral => {
            let Value::Int(i) = v else { return None };
            let width = match ty {
                SqlType::TinyInt => 8,
                SqlType::SmallInt => 16,
                SqlType::Int => 32,
                _ => 64,
            };
            let bits = if width == 64 { *i as u64 } else { (*i as u64) & ((1u64 << width) - 1) };
            let hex = if first == 'x' { format!("{bits:x}") } else { format!("{bits:X}") };
            format!("{:0>w$}", hex, w = precision.unwrap_or(0))
        }
        _ => return None,
    })
}

/// G: the shortest of fixed and scientific notation for the significant digits (all of
/// a decimal's, as stored; 15 of a float's; `precision` when given).
fn general(n: &Number, v: &Value, precision: Option<usize>, lower: bool) -> String {
    if let (Value::Decimal { .. } | Value::Int(_), None | Some(0)) = (v, precision) {
        return signed(n, fixed(n, false));
    }
    let limit = precision.filter(|p| *p > 0).unwrap_or(15);
    let (mut digits, mut exp) = n.significant();
    if digits.is_empty() {
        return "0".to_string();
    }
    if digits.len() > limit {
        let m =
            Number { negative: false, int: digits[..1].to_string(), frac: digits[1..].to_string() }.round(limit - 1);
        let m = if m.int.len() > 1 {
            exp += 1;
            m.unshifted(1).round(limit - 1)
        } else {
            m
        };
        digits = format!("{}{}", m.int, m.frac).trim_end_matches('0').to_string();
    }
    let body = if exp >= limit as i64 || exp < -5 {
        let e = if lower { 'e' } else { 'E' };
        let sign = if exp < 0 { '-' } else { '+' };
        let mantissa = if digits.len() > 1 { format!("{}.{}", &digits[..1], &digits[1..]) } else { digits };
        format!("{mantissa}{e}{sign}{:02}", exp.abs())
    } else if exp < 0 {
        format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            format!("{digits}{}", "0".repeat(int_len - digits.len()))
        } else {
            format!("{}.{}", &digits[..int_len], &digits[int_len..])
        }
    };
    signed(n, body)
}

/// One token of a custom numeric format section.
#[derive(Debug, PartialEq)]
enum Token {
    Zero,
    Hash,
    Point,
    Comma,
    Percent,
    Exponent { upper: bool, plus: bool, digits: usize },
    Literal(String),
}

fn tokens(section: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let chars: Vec<char> = section.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '0' => out.push(Token::Zero),
            '#' => out.push(Token::Hash),
            '.' => out.push(Token::Point),
            ',' => out.push(Token::Comma),
            '%' => out.push(Token::Percent),
            'E' | 'e'
                if i < chars.len()
                    && (chars[i] == '0'
                        || ((chars[i] == '+' || chars[i] == '-') && chars.get(i + 1) == Some(&'0'))) =>
            {
                let plus = chars[i] == '+';
                if chars[i] != '0' {
                    i += 1;
                }
                let start = i;
                while i < chars.len() && chars[i] == '0' {
                    i += 1;
                }
                out.push(Token::Exponent { upper: c == 'E', plus, digits: i - start });
            }
            '\\' => {
                let next = *chars.get(i)?;
                i += 1;
                out.push(Token::Literal(next.to_string()));
            }
            '\'' | '"' => {
                let end = chars[i..].iter().position(|x| *x == c)? + i;
                out.push(Token::Literal(chars[i..end].iter().collect()));
                i = end + 1;
            }
            other => out.push(Token::Literal(other.to_string())),
        }
    }
    Some(out)
}

/// A custom numeric format: up to three sections (positive; negative; zero) of digit
/// placeholders (`0`, `#`), a decimal point, group separators and scaling commas, `%`,
/// an exponent (`E+0`), escaped and quoted literals.
fn custom_number(n: &Number, pattern: &str) -> Option<String> {
    let sections: Vec<&str> = split_sections(pattern);
    let (section, own_sign) = match (sections.len(), n.negative, n.is_zero()) {
        (3, _, true) => (sections[2], true),
        (2.., true, false) if !sections[1].is_empty() => (sections[1], true),
        _ => (sections[0], false),
    };
    let toks = tokens(section)?;
    let point = toks.iter().position(|t| *t == Token::Point);
    let exponent = toks.iter().position(|t| matches!(t, Token::Exponent { .. }));
    let int_end = point.or(exponent).unwrap_or(toks.len());
    let is_digit = |t: &Token| matches!(t, Token::Zero | Token::Hash);
    // Commas right before the point (or the end of the integer part) scale by 1000 each;
    // a comma between digit placeholders groups.
    let last_digit = toks[..int_end].iter().rposition(is_digit);
    let scaling = match last_digit {
        Some(d) => toks[d + 1..int_end].iter().filter(|t| **t == Token::Comma).count(),
        None => 0,
    };
    let first_digit = toks[..int_end].iter().position(is_digit);
    let grouped = match (first_digit, last_digit) {
        (Some(f), Some(l)) => toks[f..l].contains(&Token::Comma),
        _ => false,
    };
    let frac_tokens: Vec<&Token> = match point {
        Some(p) => toks[p + 1..exponent.unwrap_or(toks.len())].iter().filter(|t| is_digit(t)).collect(),
        None => Vec::new(),
    };
    let frac_places = frac_tokens.len();
    let frac_min = frac_tokens.iter().rposition(|t| **t == Token::Zero).map_or(0, |i| i + 1);
    let min_int = match first_digit {
        Some(f) => toks[f..int_end].iter().skip_while(|t| **t != Token::Zero).filter(|t| is_digit(t)).count(),
        None => 0,
    };
    let mut value = n.clone();
    let percents = toks.iter().filter(|t| **t == Token::Percent).count();
    value = value.shifted(2 * percents);
    value = value.unshifted(3 * scaling);
    let mut exp_value = 0i64;
    if exponent.is_some() {
        let int_places = toks[..int_end].iter().filter(|t| is_digit(t)).count().max(1) as i64;
        let (digits, e) = value.significant();
        if !digits.is_empty() {
            exp_value = e - (int_places - 1);
            value =
                if exp_value >= 0 { value.unshifted(exp_value as usize) } else { value.shifted((-exp_value) as usize) };
        }
    }
    let rounded = value.round(frac_places);
    // Integer digits, padded to the placeholders' minimum.
    let mut int_digits = rounded.int.clone();
    if int_digits.len() < min_int {
        int_digits = format!("{:0>min_int$}", int_digits);
    }
    let int_digits = if grouped { group(&int_digits) } else { int_digits };
    // The fraction: forced digits, then significant ones.
    let mut frac = rounded.frac.clone();
    while frac.len() > frac_min && frac.ends_with('0') {
        frac.pop();
    }
    let mut out = String::new();
    let mut int_placed = false;
    let mut frac_chars = frac.chars();
    for (i, t) in toks.iter().enumerate() {
        match t {
            Token::Zero | Token::Hash if i < int_end => {
                if !int_placed {
                    out.push_str(&int_digits);
                    int_placed = true;
                }
            }
            Token::Zero | Token::Hash => {
                if let Some(d) = frac_chars.next() {
                    out.push(d);
                }
            }
            Token::Point => {
                if !int_placed {
                    out.push_str(&int_digits);
                    int_placed = true;
                }
                if !frac.is_empty() {
                    out.push('.');
                }
            }
            Token::Comma => {}
            Token::Percent => out.push('%'),
            Token::Exponent { upper, plus, digits } => {
                out.push(if *upper { 'E' } else { 'e' });
                if exp_value < 0 {
                    out.push('-');
                } else if *plus {
                    out.push('+');
                }
                out.push_str(&format!("{:0>w$}", exp_value.abs(), w = *digits));
            }
            Token::Literal(s) => out.push_str(s),
        }
    }
    let negative = rounded.negative && !own_sign && !rounded.is_zero();
    Some(if negative { format!("-{out}") } else { out })
}

/// A custom format's sections, split at unquoted, unescaped semicolons.
fn split_sections(pattern: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in pattern.char_indices() {
        match (quote, c) {
            _ if escaped => escaped = false,
            (_, '\\') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), x) if x == q => quote = None,
            (None, ';') => {
                out.push(&pattern[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&pattern[start..]);
    out.truncate(3);
    out
}

// ---- dates and times ----------------------------------------------------------------

fn format_datetime(days: i32, ticks: u64, offset: Option<i16>, pattern: &str, c: &Culture) -> Option<String> {
    let expanded: String;
    let pattern = if pattern.chars().count() == 1 {
        expanded = match pattern.chars().next()? {
            'd' => c.short_date.to_string(),
            'D' => c.long_date.to_string(),
            'f' => format!("{} {}", c.long_date, c.short_time),
            'F' => format!("{} {}", c.long_date, c.long_time),
            'g' => format!("{} {}", c.short_date, c.short_time),
            'G' => format!("{} {}", c.short_date, c.long_time),
            'M' | 'm' => c.month_day.to_string(),
            'O' | 'o' => "yyyy'-'MM'-'dd'T'HH':'mm':'ss'.'fffffffK".to_string(),
            'R' | 'r' => "ddd, dd MMM yyyy HH':'mm':'ss 'GMT'".to_string(),
            's' => "yyyy'-'MM'-'dd'T'HH':'mm':'ss".to_string(),
            't' => c.short_time.to_string(),
            'T' => c.long_time.to_string(),
            'u' => "yyyy'-'MM'-'dd HH':'mm':'ss'Z'".to_string(),
            'U' => format!("{} {}", c.long_date, c.long_time),
            'Y' | 'y' => c.year_month.to_string(),
            _ => return None,
        };
        &expanded
    } else {
        pattern
    };
    let (y, mo, d) = civil_from_days(days);
    let hour = (ticks / TICKS_PER_HOUR) as u32;
    let minute = (ticks % TICKS_PER_HOUR / TICKS_PER_MINUTE) as u32;
    let second = (ticks % TICKS_PER_MINUTE / TICKS_PER_SECOND) as u32;
    let fraction = ticks % TICKS_PER_SECOND;
    walk(pattern, |ch, run, chars, i, out| {
        let mut used = run;
        match ch {
            'd' => match run {
                1 => out.push_str(&d.to_string()),
                2 => out.push_str(&format!("{d:02}")),
                3 => out.push_str(&WEEKDAYS[weekday(days) as usize][..3]),
                _ => out.push_str(WEEKDAYS[weekday(days) as usize]),
            },
            'f' | 'F' if run <= 7 => {
                let digits = format!("{fraction:07}");
                let shown = &digits[..run];
                if ch == 'f' {
                    out.push_str(shown);
                } else {
                    let trimmed = shown.trim_end_matches('0');
                    if trimmed.is_empty() && out.ends_with('.') {
                        out.pop();
                    }
                    out.push_str(trimmed);
                }
            }
            'g' => out.push_str("A.D."),
            'h' => {
                let h12 = if hour.is_multiple_of(12) { 12 } else { hour % 12 };
                used = run.min(2);
                out.push_str(&if used == 1 { h12.to_string() } else { format!("{h12:02}") });
            }
            'H' => {
                used = run.min(2);
                out.push_str(&if used == 1 { hour.to_string() } else { format!("{hour:02}") });
            }
            'm' => {
                used = run.min(2);
                out.push_str(&if used == 1 { minute.to_string() } else { format!("{minute:02}") });
            }
            's' => {
                used = run.min(2);
                out.push_str(&if used == 1 { second.to_string() } else { format!("{second:02}") });
            }
            'M' => match run {
                1 => out.push_str(&mo.to_string()),
                2 => out.push_str(&format!("{mo:02}")),
                3 => out.push_str(&MONTHS[mo as usize - 1][..3]),
                _ => out.push_str(MONTHS[mo as usize - 1]),
            },
            't' => {
                let ampm = if hour < 12 { "AM" } else { "PM" };
                used = run.min(2);
                out.push_str(if used == 1 { &ampm[..1] } else { ampm });
            }
            'y' => match run {
                1 => out.push_str(&(y % 100).to_string()),
                2 => out.push_str(&format!("{:02}", y % 100)),
                n => out.push_str(&format!("{y:0n$}")),
            },
            'z' => {
                let minutes = i32::from(offset.unwrap_or(0));
                let sign = if minutes < 0 { '-' } else { '+' };
                let (h, m) = (minutes.abs() / 60, minutes.abs() % 60);
                used = run.min(3);
                out.push_str(&match used {
                    1 => format!("{sign}{h}"),
                    2 => format!("{sign}{h:02}"),
                    _ => format!("{sign}{h:02}:{m:02}"),
                });
            }
            'K' => {
                used = 1;
                if let Some(minutes) = offset {
                    let sign = if minutes < 0 { '-' } else { '+' };
                    out.push_str(&format!("{sign}{:02}:{:02}", minutes.abs() / 60, minutes.abs() % 60));
                }
            }
            ':' | '/' => {
                used = 1;
                out.push(ch);
            }
            '\'' | '"' | '\\' => used = literal(chars, i, out)?,
            '%' => used = 1,
            other => {
                used = 1;
                out.push(other);
            }
        }
        Some(used)
    })
}

/// A time value as .NET's TimeSpan formats it: `c`, `g`, `G`, or a custom format whose
/// literals must be quoted or escaped (an unescaped `:` is a FormatException: NULL).
fn format_timespan(ticks: u64, pattern: &str) -> Option<String> {
    let hour = ticks / TICKS_PER_HOUR;
    let minute = ticks % TICKS_PER_HOUR / TICKS_PER_MINUTE;
    let second = ticks % TICKS_PER_MINUTE / TICKS_PER_SECOND;
    let fraction = ticks % TICKS_PER_SECOND;
    match pattern {
        "c" | "t" | "T" => {
            let base = format!("{hour:02}:{minute:02}:{second:02}");
            return Some(if fraction == 0 { base } else { format!("{base}.{fraction:07}") });
        }
        "g" => {
            let base = format!("{hour}:{minute:02}:{second:02}");
            let f = format!("{fraction:07}");
            let f = f.trim_end_matches('0');
            return Some(if f.is_empty() { base } else { format!("{base}.{f}") });
        }
        "G" => return Some(format!("0:{hour:02}:{minute:02}:{second:02}.{fraction:07}")),
        _ => {}
    }
    walk(pattern, |ch, run, chars, i, out| {
        Some(match ch {
            'h' | 'm' | 's' if run <= 2 => {
                let v = match ch {
                    'h' => hour,
                    'm' => minute,
                    _ => second,
                };
                out.push_str(&if run == 1 { v.to_string() } else { format!("{v:02}") });
                run
            }
            'd' if run <= 8 => {
                out.push_str(&format!("{:0run$}", 0));
                run
            }
            'f' | 'F' if run <= 7 => {
                let digits = format!("{fraction:07}");
                let shown = &digits[..run];
                out.push_str(if ch == 'f' { shown } else { shown.trim_end_matches('0') });
                run
            }
            '\'' | '"' | '\\' => literal(chars, i, out)?,
            '%' => 1,
            _ => return None,
        })
    })
}

/// Walks a custom date or time format: `f` gets each character, how many times it
/// repeats from there, the format's characters, the position and the output so far, and
/// says how many characters it used (None: .NET refuses the format).
fn walk(pattern: &str, mut f: impl FnMut(char, usize, &[char], usize, &mut String) -> Option<usize>) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        let run = chars[i..].iter().take_while(|x| **x == ch).count();
        i += f(ch, run, &chars, i, &mut out)?;
    }
    Some(out)
}

/// A quoted literal (`'…'`, `"…"`) or an escaped character (`\c`) at `i`, copied to
/// `out`: the characters it took (None when a quote is not closed).
fn literal(chars: &[char], i: usize, out: &mut String) -> Option<usize> {
    let ch = chars[i];
    if ch == '\\' {
        out.push(*chars.get(i + 1)?);
        return Some(2);
    }
    let end = chars[i + 1..].iter().position(|x| *x == ch)? + i + 1;
    out.extend(&chars[i + 1..end]);
    Some(end - i + 1)
}
