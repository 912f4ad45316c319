//! How a database's files grow: SQL Server's FILEGROWTH (a step in bytes or a percentage
//! of the file) or, by default, a fraction of the file between a floor and a cap, never
//! past the file's maximum size (MAXSIZE). The log grows its file with it here; the
//! access layer grows data files with it.

/// How a file grows when it needs room (SQL Server's FILEGROWTH).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Growth {
    /// By this many bytes at a time (0: the file never grows).
    Bytes(u64),
    /// By this percentage of the file's size at the time (0: the file never grows).
    Percent(u32),
}

impl Growth {
    /// The growth setting as the registry of databases writes it: `65536` or `10%`.
    pub fn encode(self) -> String {
        match self {
            Growth::Bytes(n) => n.to_string(),
            Growth::Percent(p) => format!("{p}%"),
        }
    }

    /// Reads what [`Growth::encode`] wrote.
    pub fn parse(s: &str) -> Option<Growth> {
        match s.strip_suffix('%') {
            Some(p) => p.parse().ok().map(Growth::Percent),
            None => s.parse().ok().map(Growth::Bytes),
        }
    }
}

/// The growth rule of a file whose growth is not set: a fraction of its size, at least
/// `min` and at most `max` bytes per step. Small files grow in small steps, so a small
/// database stays small; big ones in big steps, so they seldom grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultGrowth {
    pub divisor: u64,
    pub min: u64,
    pub max: u64,
}

/// The log's default growth: a quarter of the file, 128 KiB to 256 MiB at a time.
pub const LOG_GROWTH: DefaultGrowth = DefaultGrowth { divisor: 4, min: 128 << 10, max: 256 << 20 };

/// The size a file of `size` bytes grows to when it must hold at least `need` bytes:
/// whole steps of `growth` (None: `default`), each rounded up to `align`, and never past
/// `max` bytes. None when it may not grow that far: its growth is zero, or `need`
/// exceeds `max`.
pub fn grown_size(
    size: u64,
    need: u64,
    growth: Option<Growth>,
    default: DefaultGrowth,
    max: u64,
    align: u64,
) -> Option<u64> {
    if need <= size {
        return Some(size);
    }
    if need > max {
        return None;
    }
    let step = match growth {
        Some(Growth::Bytes(n)) => n,
        Some(Growth::Percent(p)) if p > 0 => (size.saturating_mul(u64::from(p)) / 100).max(1),
        Some(Growth::Percent(_)) => 0,
        None => (size / default.divisor).clamp(default.min, default.max),
    };
    if step == 0 {
        return None;
    }
    let step = step.div_ceil(align).saturating_mul(align);
    let steps = (need - size).div_ceil(step);
    Some(size.saturating_add(steps.saturating_mul(step)).min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: DefaultGrowth = DefaultGrowth { divisor: 8, min: 64 << 10, max: 64 << 20 };

    #[test]
    fn a_file_grows_in_whole_steps_up_to_its_maximum() {
        // Default: an eighth of the file, at least 64 KiB.
        assert_eq!(grown_size(128 << 10, 130 << 10, None, D, u64::MAX, 8192), Some(192 << 10));
        assert_eq!(grown_size(8 << 20, (8 << 20) + 1, None, D, u64::MAX, 8192), Some(9 << 20));
        // Several steps when one is not enough; the last one cut at the maximum.
        assert_eq!(grown_size(1 << 20, 3 << 20, Some(Growth::Bytes(1 << 20)), D, u64::MAX, 4096), Some(3 << 20));
        assert_eq!(grown_size(1 << 20, (3 << 20) + 1, Some(Growth::Bytes(1 << 20)), D, 7 << 19, 4096), Some(7 << 19));
        // Percentages of the current size, rounded up to the alignment.
        assert_eq!(grown_size(1 << 20, (1 << 20) + 1, Some(Growth::Percent(10)), D, u64::MAX, 4096), Some(1_155_072));
        assert_eq!(grown_size(4096, 4097, Some(Growth::Percent(1)), D, u64::MAX, 4096), Some(8192));
        // Enough already: no growth, whatever the setting.
        assert_eq!(grown_size(1 << 20, 1 << 20, Some(Growth::Bytes(0)), D, 0, 4096), Some(1 << 20));
    }

    #[test]
    fn a_zero_growth_or_a_need_past_the_maximum_is_refused() {
        assert_eq!(grown_size(1 << 20, (1 << 20) + 1, Some(Growth::Bytes(0)), D, u64::MAX, 4096), None);
        assert_eq!(grown_size(1 << 20, (1 << 20) + 1, Some(Growth::Percent(0)), D, u64::MAX, 4096), None);
        assert_eq!(grown_size(1 << 20, (2 << 20) + 1, None, D, 2 << 20, 4096), None);
    }

    #[test]
    fn growth_settings_round_trip_through_their_text() {
        for g in [Growth::Bytes(0), Growth::Bytes(65536), Growth::Percent(10)] {
            assert_eq!(Growth::parse(&g.encode()), Some(g));
        }
        assert_eq!(Growth::parse("x%"), None);
        assert_eq!(Growth::parse(""), None);
    }
}
