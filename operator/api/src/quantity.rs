//! Kubernetes resource quantities as byte counts, for the sizes the operator
//! and the runtime reason about (the snapshot volume and its budget). The
//! API server admits only the quantity grammar (`bounds::QUANTITY_PATTERN`);
//! this turns an admitted string into whole bytes, exactly (no float).

/// The whole bytes `text` stands for, rounded down; `None` when it is not a
/// quantity or exceeds `u64::MAX` bytes.
pub fn bytes(text: &str) -> Option<u64> {
    u64::try_from(scaled(text, 0)?).ok()
}

/// Thousandths of what `text` stands for (CPU in millicores), rounded down;
/// `None` when it is not a quantity or is out of range.
pub fn millis(text: &str) -> Option<u128> {
    scaled(text, 3)
}

/// `text`'s value times 10^`shift`, rounded down.
fn scaled(text: &str, shift: i32) -> Option<u128> {
    let text = text.strip_prefix('+').unwrap_or(text);
    let number_end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    // value = digits / 10^scale, with `digits` the number without its point.
    let digits: u128 = format!("{whole}{fraction}").parse().ok()?;
    let mut scale = i32::try_from(fraction.len()).ok()? - shift;
    let mut factor: u128 = 1;
    match suffix {
        "" => {}
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = "KMGTPE".find(&suffix[..1])? as u32 + 1;
            factor = 1024u128.pow(power);
        }
        "n" => scale += 9,
        "u" => scale += 6,
        "m" => scale += 3,
        "k" => scale -= 3,
        "M" => scale -= 6,
        "G" => scale -= 9,
        "T" => scale -= 12,
        "P" => scale -= 15,
        "E" => scale -= 18,
        exponent => {
            let exponent = exponent.strip_prefix(['e', 'E'])?;
            let exponent = exponent.strip_prefix('+').unwrap_or(exponent);
            // Fractional exponents are in the grammar but no size uses them.
            scale -= exponent.parse::<i32>().ok().filter(|e| e.abs() <= 40)?;
        }
    }
    let product = digits.checked_mul(factor)?;
    if scale >= 0 {
        Some(product / 10u128.checked_pow(u32::try_from(scale).ok()?).unwrap_or(u128::MAX))
    } else {
        product.checked_mul(10u128.checked_pow(scale.unsigned_abs())?)
    }
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn millis_keep_what_bytes_round_away() {
        use super::millis;
        assert_eq!(millis("100m"), Some(100));
        assert_eq!(millis("0.25"), Some(250));
        assert_eq!(millis("2"), Some(2000));
        assert_eq!(millis("1500u"), Some(1));
        assert_eq!(millis("1Ki"), Some(1_024_000));
        assert_eq!(millis("x"), None);
    }

    #[test]
    fn binary_and_decimal_suffixes() {
        assert_eq!(bytes("1Gi"), Some(1 << 30));
        assert_eq!(bytes("1536Mi"), Some(1536 << 20));
        assert_eq!(bytes("1.5Gi"), Some(3 << 29));
        assert_eq!(bytes("2Ki"), Some(2048));
        assert_eq!(bytes("1Ei"), Some(1 << 60));
        assert_eq!(bytes("1G"), Some(1_000_000_000));
        assert_eq!(bytes("500M"), Some(500_000_000));
        assert_eq!(bytes("3k"), Some(3000));
        assert_eq!(bytes("+7"), Some(7));
        assert_eq!(bytes("123"), Some(123));
    }

    #[test]
    fn exponents_fractions_and_sub_byte_units() {
        assert_eq!(bytes("1e3"), Some(1000));
        assert_eq!(bytes("1E+6"), Some(1_000_000));
        assert_eq!(bytes("25e-1"), Some(2));
        assert_eq!(bytes(".5k"), Some(500));
        assert_eq!(bytes("3."), Some(3));
        assert_eq!(bytes("1500m"), Some(1));
        assert_eq!(bytes("999m"), Some(0));
        assert_eq!(bytes("5n"), Some(0));
    }

    #[test]
    fn what_is_not_a_quantity_or_too_big_is_none() {
        for text in ["", "Gi", ".", "1Xi", "1gi", "-1", "1 Gi", "1e", "1e1.5", "16Ei", "99999999999999999999", "1e40"] {
            assert_eq!(bytes(text), None, "{text:?}");
        }
    }
}
