//! The Hijri calendar of `CONVERT` styles 130 and 131, as SQL Server computes it (the
//! "Kuwaiti algorithm"): the tabular Islamic calendar whose 1 Muharram 1 AH is
//! 622-07-18 of the proleptic Gregorian calendar. Years run in 30-year cycles of which the
//! 2nd, 5th, 7th, 10th, 13th, 16th, 18th, 21st, 24th, 26th and 29th have 355 days, the
//! others 354; odd months have 30 days, even months 29, and the last month 30 in a 355-day
//! year.
//!
//! Style 130 is `dd mon yyyy hh:mi:ss:mmmAM` with the month's Arabic name, style 131
//! `dd/mm/yyyy hh:mi:ss:mmmAM`; the day and the hour are padded with a space to two
//! characters (` 7/05/1421 12:14:35:727PM`). Both read back the same forms.

/// 1 Muharram 1 AH, in days since 0001-01-01 (the calendar's `days`).
const EPOCH_DAYS: i32 = 227_013;

/// The months' names in style 130.
pub(crate) const MONTHS: [&str; 12] = [
    "محرم",
    "صفر",
    "ربيع الأول",
    "ربيع الثاني",
    "جمادى الأولى",
    "جمادى الثانية",
    "رجب",
    "شعبان",
    "رمضان",
    "شوال",
    "ذو القعدة",
    "ذو الحجة",
];

/// Days from the epoch to the first day of Hijri year `year` (1-based).
fn year_start(year: i32) -> i32 {
    (year - 1) * 354 + (3 + 11 * year).div_euclid(30)
}

/// Days from the start of a year to the first day of `month` (1-based).
fn month_start(month: u32) -> i32 {
    (59 * (month as i32 - 1) + 1) / 2
}

fn year_length(year: i32) -> i32 {
    year_start(year + 1) - year_start(year)
}

fn month_length(year: i32, month: u32) -> u32 {
    match month {
        12 if year_length(year) == 355 => 30,
        m if m % 2 == 1 => 30,
        _ => 29,
    }
}

/// The Hijri year, month and day of `days` (since 0001-01-01); None before the epoch.
pub(crate) fn from_days(days: i32) -> Option<(i32, u32, u32)> {
    let since = days - EPOCH_DAYS;
    if since < 0 {
        return None;
    }
    let mut year = (30 * since + 10_646) / 10_631;
    while year_start(year + 1) <= since {
        year += 1;
    }
    while year > 1 && year_start(year) > since {
        year -= 1;
    }
    let in_year = since - year_start(year);
    let mut month = 12;
    while month > 1 && month_start(month) > in_year {
        month -= 1;
    }
    Some((year, month, (in_year - month_start(month)) as u32 + 1))
}

/// The days (since 0001-01-01) of a Hijri date; None for one that does not exist.
pub(crate) fn to_days(year: i32, month: u32, day: u32) -> Option<i32> {
    if !(1..=9_999).contains(&year) || !(1..=12).contains(&month) || day == 0 || day > month_length(year, month) {
        return None;
    }
    Some(EPOCH_DAYS + year_start(year) + month_start(month) + day as i32 - 1)
}

/// The date part of style 130 or 131; None for a style of neither or a day before the
/// epoch.
pub(crate) fn format_date(days: i32, style: i32) -> Option<String> {
    let (year, month, day) = from_days(days)?;
    match style {
        130 => Some(format!("{day:>2} {} {year:04}", MONTHS[month as usize - 1])),
        131 => Some(format!("{day:>2}/{month:02}/{year:04}")),
        _ => None,
    }
}

/// Reads the date at the start of `text` in style 130 (`dd month yyyy`) or 131
/// (`dd/mm/yyyy`): its days since 0001-01-01 and the rest of the text (the time).
pub(crate) fn parse_date(text: &str, style: i32) -> Option<(i32, &str)> {
    let text = text.trim_start();
    let (day, month, year, rest) = if style == 130 {
        let (month, at, name) =
            MONTHS.iter().enumerate().rev().find_map(|(i, m)| text.find(m).map(|at| (i as u32 + 1, at, *m)))?;
        let day: u32 = text[..at].trim().parse().ok()?;
        let after = text[at + name.len()..].trim_start();
        let end = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
        (day, month, after[..end].parse().ok()?, &after[end..])
    } else {
        let end = text.find(char::is_whitespace).unwrap_or(text.len());
        let mut parts = text[..end].split('/');
        let (d, m, y) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        (d.parse().ok()?, m.parse().ok()?, y.parse().ok()?, &text[end..])
    };
    Some((to_days(year, month, day)?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::datetime::days_from_civil;

    #[test]
    fn known_dates_agree_with_sql_server() {
        // SQL Server's documented example: 2000-08-07 is 7/05/1421.
        assert_eq!(from_days(days_from_civil(2000, 8, 7)), Some((1421, 5, 7)));
        assert_eq!(from_days(days_from_civil(2019, 6, 19)), Some((1440, 10, 16)));
        assert_eq!(from_days(days_from_civil(622, 7, 18)), Some((1, 1, 1)));
        assert_eq!(from_days(days_from_civil(622, 7, 17)), None);
        assert_eq!(format_date(days_from_civil(2000, 8, 7), 131).as_deref(), Some(" 7/05/1421"));
    }

    #[test]
    fn every_day_round_trips_and_months_have_their_lengths() {
        let start = days_from_civil(622, 7, 18);
        let mut previous = (1, 1, 0);
        for days in start..start + 40 * 355 {
            let (y, m, d) = from_days(days).unwrap();
            assert_eq!(to_days(y, m, d), Some(days));
            if d == 1 && days > start {
                assert_eq!(previous.2, month_length(previous.0, previous.1));
            } else if d > 1 {
                assert_eq!((y, m, d - 1), previous);
            }
            previous = (y, m, d);
        }
        assert_eq!(to_days(1421, 2, 30), None);
        assert_eq!(to_days(1421, 13, 1), None);
    }

    #[test]
    fn both_styles_read_back() {
        let days = days_from_civil(2026, 11, 30);
        for style in [130, 131] {
            let text = format!("{} 10:00:00:000AM", format_date(days, style).unwrap());
            let (back, rest) = parse_date(&text, style).unwrap();
            assert_eq!(back, days);
            assert_eq!(rest.trim(), "10:00:00:000AM");
        }
    }
}
