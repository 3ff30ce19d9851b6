//! Durations as kubectl spells them: `120s`, `2m`, `1m30s`, `1h`, `500ms`;
//! a bare number is seconds. At most [`MAX`]: a deadline is `now + d`,
//! which overflows (and panicked) for the largest `u64` seconds.

use std::time::Duration;

/// The longest duration accepted: a week.
pub const MAX: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parses `text` (`120s`, `1m30s`, `1h`, `500ms`, `90`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let invalid = || format!("invalid duration {text:?}: use a number with a unit, e.g. 120s, 2m, 1m30s or 1h");
    if text.is_empty() {
        return Err(invalid());
    }
    let total = if text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u64>().map(Duration::from_secs).map_err(|_| invalid())?
    } else {
        sum_of_parts(text).ok_or_else(invalid)?
    };
    if total > MAX {
        return Err(format!("duration {text:?} is longer than a week (168h): use at most 168h"));
    }
    Ok(total)
}

/// `1h2m3s500ms` as a duration; `None` when it is not one (or overflows).
fn sum_of_parts(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let value: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let part = match unit {
            "ms" => Duration::from_millis(value),
            "s" => Duration::from_secs(value),
            "m" => Duration::from_secs(value.checked_mul(60)?),
            "h" => Duration::from_secs(value.checked_mul(3600)?),
            _ => return None,
        };
        total = total.checked_add(part)?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_combinations() {
        let cases = [
            ("120s", 120_000),
            ("2m", 120_000),
            ("1m30s", 90_000),
            ("1h", 3_600_000),
            ("1h2m3s", 3_723_000),
            ("500ms", 500),
            ("1s500ms", 1_500),
            ("90", 90_000),
            (" 5s ", 5_000),
            ("0s", 0),
        ];
        for (text, millis) in cases {
            assert_eq!(parse_duration(text), Ok(Duration::from_millis(millis)), "{text}");
        }
    }

    #[test]
    fn more_than_a_week_is_refused_naming_the_bound() {
        assert_eq!(parse_duration("168h"), Ok(MAX));
        for text in ["10000000000000000000s", "10000000000000000000", "169h", "168h1ms", "605000"] {
            let err = parse_duration(text).expect_err(text);
            assert!(err.contains("at most 168h"), "{text}: {err}");
        }
        // Whatever it accepts, a deadline from now never overflows.
        let _ = std::time::Instant::now() + MAX;
    }

    #[test]
    fn nonsense_is_refused_with_an_example() {
        for text in ["", "s", "5x", "-5s", "1.5s", "5 s", "m5", "99999999999999999999s", "18446744073709551615h"] {
            let err = parse_duration(text).expect_err(text);
            assert!(err.contains("e.g. 120s"), "{text}: {err}");
        }
    }
}
