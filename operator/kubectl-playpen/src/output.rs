//! Tables and ages as kubectl prints them, and text from elsewhere made
//! safe for a terminal.

use std::fmt::Write as _;

/// `text` with every control character (C0, DEL, C1) and Unicode
/// direction override written as a `\u{..}` escape: text that comes from the
/// cluster or a Pod (condition messages, termination logs, file names, a
/// browser's answer) must not move the cursor, recolour or rewrite the
/// user's terminal. Newlines are kept when `newlines` is set.
pub fn untrusted(text: &str, newlines: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if (c.is_control() && !(newlines && c == '\n')) || bidi {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// Renders `rows` under `headers` as kubectl does: left-aligned columns,
/// each as wide as its widest cell, three spaces apart, no trailing blanks.
/// Short rows are padded with empty cells.
pub fn render_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).chain([headers.len()]).max().unwrap_or(0);
    // Cells carry the cluster's text (reasons, messages): one line each, escaped.
    let cell = |row: &[String], i: usize| untrusted(row.get(i).map(String::as_str).unwrap_or(""), false);
    let header_row: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    let all: Vec<&[String]> = std::iter::once(header_row.as_slice()).chain(rows.iter().map(Vec::as_slice)).collect();
    let widths: Vec<usize> =
        (0..columns).map(|i| all.iter().map(|row| cell(row, i).chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in all {
        let mut line = String::new();
        for (i, width) in widths.iter().enumerate() {
            let text = cell(row, i);
            line.push_str(&text);
            if i + 1 < columns {
                line.push_str(&" ".repeat(width - text.chars().count() + 3));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// An age the way kubectl prints it (`HumanDuration` of apimachinery):
/// `45s`, `5m10s`, `42m`, `5h7m`, `20h`, `3d4h`, `100d`, `2y40d`, `9y`.
pub fn format_age(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    let minutes = seconds / 60;
    let hours = seconds / 3600;
    let days = hours / 24;
    if seconds < 60 * 2 {
        format!("{seconds}s")
    } else if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        }
    } else if minutes < 60 * 3 {
        format!("{minutes}m")
    } else if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        let d = days % 365;
        if d == 0 {
            format!("{}y", days / 365)
        } else {
            format!("{}y{d}d", days / 365)
        }
    } else {
        format!("{}y", days / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_from_the_cluster_are_escaped() {
        let hostile = "failed\u{1b}[2J\u{1b}]0;owned\u{7}\rok\u{9b}1m \u{202e}txt.exe\nnext";
        assert_eq!(
            untrusted(hostile, false),
            "failed\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{d}ok\\u{9b}1m \\u{202e}txt.exe\\u{a}next"
        );
        assert!(untrusted(hostile, true).ends_with("txt.exe\nnext"));
        assert_eq!(untrusted("plain text, ünïcode", false), "plain text, ünïcode");
        let table = render_table(&["NAME", "MESSAGE"], &[vec!["s".into(), "a\u{1b}[31mred\nline".into()]]);
        assert!(!table.contains('\u{1b}') && table.lines().count() == 2, "{table}");
    }

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| (*c).to_owned()).collect()
    }

    #[test]
    fn columns_align_three_spaces_apart() {
        let table = render_table(
            &["NAME", "PHASE", "AGE"],
            &[row(&["demo", "Ready", "40s"]), row(&["a-much-longer-name", "-", "3d4h"])],
        );
        assert_eq!(
            table,
            "NAME                 PHASE   AGE\n\
             demo                 Ready   40s\n\
             a-much-longer-name   -       3d4h\n"
        );
    }

    #[test]
    fn empty_table_is_the_header() {
        assert_eq!(render_table(&["NAME", "AGE"], &[]), "NAME   AGE\n");
        assert_eq!(render_table(&[], &[]), "\n");
    }

    #[test]
    fn short_and_long_rows_and_trailing_blanks() {
        let table = render_table(&["A", "B"], &[row(&["x"]), row(&["y", "z", "extra"])]);
        assert_eq!(table, "A   B\nx\ny   z   extra\n");
        // an empty last cell leaves no trailing blanks
        assert_eq!(render_table(&["A", "B"], &[row(&["long", ""])]), "A      B\nlong\n");
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        let table = render_table(&["N", "X"], &[row(&["ää", "1"]), row(&["a", "2"])]);
        assert_eq!(table, "N    X\nää   1\na    2\n");
    }

    #[test]
    fn ages_follow_kubectl() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (130, "2m10s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 7 * 60, "3h7m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 3599, "47h"),
            (48 * 3600, "2d"),
            (3 * 86400 + 4 * 3600, "3d4h"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            (770 * 86400, "2y40d"),
            (8 * 365 * 86400, "8y"),
            (9 * 365 * 86400 + 5 * 86400, "9y"),
        ];
        for (seconds, want) in cases {
            assert_eq!(format_age(seconds), want, "{seconds}s");
        }
    }
}
