//! Durations as raftlock's command lines write them: `500ms`, `10s`, `2m`, `1m30s`,
//! `1h`, or a bare number of seconds (`10`, as etcdctl's TTLs). The one
//! parser behind every duration flag of `raftlock` and of the
//! `raftlock-chaos` tool.

use std::time::Duration;

/// Parses `<number><unit>` with unit `ms`, `s`, `m` or `h`, or a bare
/// number of seconds (for clap's `value_parser`); surrounding white space
/// is ignored. The error says what is accepted.
///
/// ```
/// use std::time::Duration;
/// use raftlock::duration::parse_duration;
///
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
/// assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
/// assert!(parse_duration("1.5s").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    parse(text)
}

/// The same parser as [`parse_duration`] (which now reads a bare number
/// as seconds too); kept for callers written before it did.
pub fn parse_duration_or_seconds(text: &str) -> Result<Duration, String> {
    parse(text)
}

/// `<number><unit>` repeated (`1m30s`, `1h15m`, largest unit first, each
/// unit at most once); a lone bare number is that many seconds.
fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = || {
        format!("{text:?} is not a duration; write e.g. 500ms, 10 (seconds), 10s, 2m, 1h or 1m30s")
    };
    if text.is_empty() {
        return Err(bad());
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        let n: u64 = text.parse().map_err(|_| bad())?;
        return n
            .checked_mul(1_000)
            .map(Duration::from_millis)
            .ok_or_else(|| format!("{text:?} is too long a duration"));
    }
    let mut rest = text;
    let mut total: u64 = 0;
    // Units in the order they may appear, largest first.
    let mut allowed: &[(&str, u64)] = &[("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(split);
        if number.is_empty() {
            return Err(bad());
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let position = allowed
            .iter()
            .position(|(u, _)| *u == unit)
            .ok_or_else(bad)?;
        let size = allowed[position].1;
        allowed = &allowed[position + 1..];
        let n: u64 = number.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(size)
            .and_then(|ms| total.checked_add(ms))
            .ok_or_else(|| format!("{text:?} is too long a duration"))?;
        rest = next;
    }
    Ok(Duration::from_millis(total))
}

/// Prints a duration the way [`parse_duration`] reads it, in the largest
/// unit that keeps it exact (`1500ms`, `10s`, `2m`).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    for (unit, size) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms % size == 0 {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration(" 0s "), Ok(Duration::ZERO));
    }

    #[test]
    fn reads_compound_durations_largest_unit_first() {
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h15m"), Ok(Duration::from_secs(4500)));
        assert_eq!(parse_duration("2s500ms"), Ok(Duration::from_millis(2500)));
        assert_eq!(
            parse_duration_or_seconds("1h2m3s4ms"),
            Ok(Duration::from_millis(3_723_004))
        );
        for bad in ["30s1m", "1m1m", "1m30", "1ms1s", "1m 30s", "m30s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rejects_with_a_hint() {
        for bad in ["", "ms", "10x", "1.5s", "-1s", "10 s", "s10"] {
            let e = parse_duration(bad).expect_err(bad);
            assert!(e.contains("ms"), "{bad}: {e}");
        }
        assert!(parse_duration("99999999999999999h")
            .expect_err("overflow")
            .contains("too long"));
    }

    #[test]
    fn reads_a_bare_number_as_seconds() {
        assert_eq!(parse_duration_or_seconds("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration_or_seconds(" 7 "), Ok(Duration::from_secs(7)));
        assert_eq!(
            parse_duration_or_seconds("1500ms"),
            Ok(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_duration_or_seconds("10m"),
            Ok(Duration::from_secs(600))
        );
        assert_eq!(
            parse_duration_or_seconds("1h"),
            Ok(Duration::from_secs(3600))
        );
        for bad in ["", "s", "10x", "1.5s", "-1", "10 s"] {
            assert!(parse_duration_or_seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert!(parse_duration("99999999999999999999").is_err());
    }

    #[test]
    fn formats_exactly() {
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format_duration(Duration::from_secs(10)), "10s");
        assert_eq!(format_duration(Duration::from_secs(120)), "2m");
        assert_eq!(format_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }
}
