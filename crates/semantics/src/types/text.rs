//! Character data: the Windows-1252 code page of `char`/`varchar`, and the default
//! collation SQL_Latin1_General_CP1_CI_AS (case-insensitive, accent-sensitive, trailing
//! spaces ignored).

/// Characters of Windows-1252 bytes 0x80..=0x9F (the five unassigned bytes map to the C1
/// control of the same number, as SQL Server round-trips them).
const CP1252_HIGH: [char; 32] = [
    '\u{20AC}', '\u{0081}', '\u{201A}', '\u{0192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}', '\u{02C6}',
    '\u{2030}', '\u{0160}', '\u{2039}', '\u{0152}', '\u{008D}', '\u{017D}', '\u{008F}', '\u{0090}', '\u{2018}',
    '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}', '\u{02DC}', '\u{2122}', '\u{0161}',
    '\u{203A}', '\u{0153}', '\u{009D}', '\u{017E}', '\u{0178}',
];

/// The Windows-1252 byte of a character, if it has one.
pub(crate) fn cp1252_byte(c: char) -> Option<u8> {
    let u = c as u32;
    if u < 0x80 || (0xA0..=0xFF).contains(&u) {
        return Some(u as u8);
    }
    CP1252_HIGH.iter().position(|&h| h == c).map(|i| 0x80 + i as u8)
}

/// Encodes as Windows-1252; characters outside the code page become `?`.
pub fn encode_cp1252(s: &str) -> Vec<u8> {
    if is_ascii(s.as_bytes()) {
        return s.as_bytes().to_vec();
    }
    s.chars().map(|c| cp1252_byte(c).unwrap_or(b'?')).collect()
}

/// Decodes Windows-1252 bytes (ASCII, the common case, without copying).
pub fn decode_cp1252(b: &[u8]) -> std::borrow::Cow<'_, str> {
    if is_ascii(b) {
        // SAFETY: ASCII bytes are valid UTF-8 (and the same characters in Windows-1252);
        // checking them a second time cost as much as the check above (a char(1000)
        // column's bytes are read once per row returned).
        return std::borrow::Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(b) });
    }
    std::borrow::Cow::Owned(
        b.iter()
            .map(|&b| if (0x80..0xA0).contains(&b) { CP1252_HIGH[usize::from(b - 0x80)] } else { char::from(b) })
            .collect(),
    )
}

/// Whether every byte is ASCII: 64 bytes a step, their high bits gathered by OR (about
/// half the instructions of `<[u8]>::is_ascii` on a `char(1000)` value, which every row
/// of such a column returned goes through).
pub(crate) fn is_ascii(b: &[u8]) -> bool {
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let mut blocks = b.chunks_exact(64);
    for block in &mut blocks {
        let gathered = block
            .chunks_exact(8)
            .map(|word| u64::from_ne_bytes(word.try_into().expect("eight bytes")))
            .fold(0, |acc, word| acc | word);
        if gathered & HIGH_BITS != 0 {
            return false;
        }
    }
    blocks.remainder().is_ascii()
}

/// The string as `varchar` holds it: characters outside Windows-1252 replaced by `?`.
pub(crate) fn to_code_page(s: &str) -> std::borrow::Cow<'_, str> {
    if is_ascii(s.as_bytes()) || s.chars().all(|c| cp1252_byte(c).is_some()) {
        std::borrow::Cow::Borrowed(s)
    } else {
        std::borrow::Cow::Owned(s.chars().map(|c| if cp1252_byte(c).is_some() { c } else { '?' }).collect())
    }
}

/// Drops trailing spaces (U+0020), which comparisons ignore.
pub(crate) fn trim_trailing_spaces(s: &str) -> &str {
    s.trim_end_matches(' ')
}

/// The accent-free base letter of a Latin-1/Latin Extended-A letter and an accent weight
/// (0 = none); other characters are their own base.
fn base_and_accent(c: char) -> (char, u8) {
    const TABLE: &[(char, &str)] = &[
        ('A', "ÀÁÂÃÄÅàáâãäåĀāĂăĄą"),
        ('C', "ÇçĆćĈĉĊċČč"),
        ('D', "ĎďĐđ"),
        ('E', "ÈÉÊËèéêëĒēĔĕĖėĘęĚě"),
        ('G', "ĜĝĞğĠġĢģ"),
        ('H', "ĤĥĦħ"),
        ('I', "ÌÍÎÏìíîïĨĩĪīĬĭĮįİ"),
        ('J', "Ĵĵ"),
        ('K', "Ķķ"),
        ('L', "ĹĺĻļĽľĿŀŁł"),
        ('N', "ÑñŃńŅņŇň"),
        ('O', "ÒÓÔÕÖØòóôõöøŌōŎŏŐő"),
        ('R', "ŔŕŖŗŘř"),
        ('S', "ŚśŜŝŞşŠš"),
        ('T', "ŢţŤťŦŧ"),
        ('U', "ÙÚÛÜùúûüŨũŪūŬŭŮůŰűŲų"),
        ('W', "Ŵŵ"),
        ('Y', "ÝýÿŶŷŸ"),
        ('Z', "ŹźŻżŽž"),
    ];
    if c.is_ascii() {
        return (c.to_ascii_uppercase(), 0);
    }
    for (base, accented) in TABLE {
        if let Some(i) = accented.chars().position(|a| a == c) {
            // upper and lower case of one accent share a weight
            let upper = c.to_uppercase().next().unwrap_or(c);
            let j = accented.chars().position(|a| a == upper).unwrap_or(i);
            return (*base, 1 + j as u8);
        }
    }
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => (u, 0),
        _ => (c, 0),
    }
}

/// Case-folds one character the way the collation compares it (accents kept).
pub(crate) fn fold_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// The collation sort key of a string: base letters first (so `e` < `é` < `f`), then
/// accents; case is ignored and trailing spaces dropped. Two strings compare equal under
/// the collation exactly when their keys are equal, and keys compare as the strings do.
pub fn sort_key(s: &str) -> Vec<u8> {
    let s = trim_trailing_spaces(s);
    let mut key = Vec::with_capacity(s.len() * 4 + 3);
    let mut accents = Vec::new();
    for c in s.chars() {
        let (base, accent) = base_and_accent(c);
        // + 1 keeps every group above the 000000 separator
        key.extend_from_slice(&(base as u32 + 1).to_be_bytes()[1..]);
        accents.push(accent);
    }
    key.extend_from_slice(&[0, 0, 0]);
    key.extend_from_slice(&accents);
    key
}

/// Compares two strings under the collation.
pub(crate) fn collate_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (trim_trailing_spaces(a), trim_trailing_spaces(b));
    if a.is_ascii() && b.is_ascii() {
        return a.bytes().map(|c| c.to_ascii_uppercase()).cmp(b.bytes().map(|c| c.to_ascii_uppercase()));
    }
    sort_key(a).cmp(&sort_key(b))
}

/// Equality of single characters under the collation.
pub(crate) fn chars_equal(a: char, b: char) -> bool {
    a == b || fold_char(a) == fold_char(b)
}

/// Whether `c` lies within `lo..=hi` under the collation (for LIKE's `[a-z]`).
pub(crate) fn char_in_range(c: char, lo: char, hi: char) -> bool {
    let key = |c: char| {
        let (b, a) = base_and_accent(c);
        (b as u32, a)
    };
    key(lo) <= key(c) && key(c) <= key(hi)
}

/// Finds `needle` in `haystack` (case-insensitively); the byte offset of the first match.
/// Allocates only the needle's characters, so a caller that searches a long string again
/// from after each match (REPLACE) stays linear in its length.
pub(crate) fn find_ci(haystack: &str, needle: &str) -> Option<usize> {
    let n: Vec<char> = needle.chars().collect();
    let first = *n.first()?;
    haystack.char_indices().find_map(|(i, c)| {
        if !chars_equal(c, first) {
            return None;
        }
        let mut rest = haystack[i + c.len_utf8()..].chars();
        n[1..].iter().all(|&want| rest.next().is_some_and(|h| chars_equal(h, want))).then_some(i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::*;

    #[test]
    fn code_page() {
        assert_eq!(encode_cp1252("a€é"), vec![b'a', 0x80, 0xE9]);
        assert_eq!(encode_cp1252("Ā中"), b"??".to_vec());
        assert_eq!(decode_cp1252(&[0x80, 0xE9, 0x81]), "€é\u{81}");
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(encode_cp1252(&decode_cp1252(&all)), all);
        assert_eq!(to_code_page("Ā1"), "?1");
    }

    #[test]
    fn ascii_check_finds_a_high_byte_anywhere() {
        for len in [0, 1, 63, 64, 65, 127, 128, 1000] {
            let mut b = vec![b'A'; len];
            assert!(is_ascii(&b), "{len} ASCII bytes");
            for at in 0..len {
                b[at] = 0x80;
                assert!(!is_ascii(&b), "a high byte at {at} of {len}");
                b[at] = b'A';
            }
        }
    }

    #[test]
    fn collation() {
        assert_eq!(collate_cmp("a", "A"), Equal);
        assert_eq!(collate_cmp("a", "a  "), Equal);
        assert_eq!(collate_cmp("a", "B"), Less);
        assert_eq!(collate_cmp("e", "é"), Less);
        assert_eq!(collate_cmp("é", "f"), Less);
        assert_eq!(collate_cmp("É", "é"), Equal);
        assert_eq!(collate_cmp("éa", "eb"), Less);
        assert_eq!(collate_cmp("a", "ab"), Less);
        assert_eq!(collate_cmp("", " "), Equal);
        assert_eq!(find_ci("Hello World", "WORLD"), Some(6));
        assert!(char_in_range('B', 'a', 'z'));
        assert!(!char_in_range('1', 'a', 'z'));
    }
}
