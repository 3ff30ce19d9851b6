//! A control request's body: its announced length, judged before a byte of
//! it is read (a document has a hard size, so an oversized one is refused
//! unread), and the read itself, bounded in time so that a slow client
//! cannot hold the busy lock a reopen and a capture share.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

/// The most bytes of a refused request's body read and dropped: reading
/// them lets the answer reach a client that sent them, where closing with
/// unread bytes resets the connection.
pub const DISCARD_MAX: usize = 4096;

/// What a request announced about its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// `Content-Length: n`.
    Announced(usize),
    /// No `Content-Length`, or a chunked body (whose size is known only
    /// once it is read).
    Missing,
    /// A `Content-Length` that is not one decimal number.
    Malformed,
}

/// The body's length from the values of `Content-Length` and
/// `Transfer-Encoding` (pure). A request with both is answered as one
/// without a length: the two disagree about where the body ends.
pub fn length(content_length: Option<&[u8]>, transfer_encoding: Option<&[u8]>) -> Length {
    if transfer_encoding.is_some() {
        return Length::Missing;
    }
    let Some(value) = content_length else { return Length::Missing };
    let digits = value.trim_ascii();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Length::Malformed;
    }
    // More digits than a usize holds is larger than any bound.
    std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse().ok())
        .map_or(Length::Announced(usize::MAX), Length::Announced)
}

/// Why a body was not read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFault {
    /// It did not arrive within the bound.
    TimedOut,
    /// The client stopped sending (or the connection failed) before its length.
    EndedEarly,
}

/// The body of `length` bytes: `received` (what came with the head) and the
/// rest from `stream`, all of it within `within`. Bytes beyond `length`
/// are not read.
pub async fn read<R: AsyncRead + Unpin>(
    stream: &mut R,
    received: &[u8],
    length: usize,
    within: Duration,
) -> Result<Vec<u8>, BodyFault> {
    let mut body = received[..received.len().min(length)].to_vec();
    let rest = async {
        let mut chunk = [0u8; 16 * 1024];
        while body.len() < length {
            let want = (length - body.len()).min(chunk.len());
            match stream.read(&mut chunk[..want]).await {
                Ok(0) | Err(_) => return Err(BodyFault::EndedEarly),
                Ok(n) => body.extend_from_slice(&chunk[..n]),
            }
        }
        Ok(())
    };
    tokio::time::timeout(within, rest).await.map_err(|_| BodyFault::TimedOut)??;
    Ok(body)
}

/// Reads and drops up to `unread` bytes (at most [`DISCARD_MAX`]) within `within`.
pub async fn discard<R: AsyncRead + Unpin>(stream: &mut R, unread: usize, within: Duration) {
    let mut sink = [0u8; DISCARD_MAX];
    let mut left = unread.min(DISCARD_MAX);
    let _ = tokio::time::timeout(within, async {
        while left > 0 {
            match stream.read(&mut sink[..left]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left -= n,
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_is_one_decimal_number_and_nothing_else() {
        assert_eq!(length(Some(b" 42 "), None), Length::Announced(42));
        assert_eq!(length(Some(b"0"), None), Length::Announced(0));
        assert_eq!(length(None, None), Length::Missing);
        assert_eq!(length(Some(b"42"), Some(b"chunked")), Length::Missing, "two ends of one body");
        assert_eq!(length(None, Some(b"chunked")), Length::Missing);
        for bad in [&b""[..], b"-1", b"+5", b"4 2", b"0x10", b"42, 42", b"1e3"] {
            assert_eq!(length(Some(bad), None), Length::Malformed, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(length(Some(b"99999999999999999999999999"), None), Length::Announced(usize::MAX));
    }

    #[tokio::test]
    async fn the_body_is_what_came_with_the_head_and_the_rest_up_to_its_length() {
        let mut rest: &[u8] = b"lo world, and more";
        let body = read(&mut rest, b"hel", 11, Duration::from_secs(1)).await.unwrap();
        assert_eq!(body, b"hello world");
        assert_eq!(rest, b", and more", "nothing beyond the length is read");
        let mut none: &[u8] = b"";
        assert_eq!(read(&mut none, b"abcdef", 4, Duration::from_secs(1)).await.unwrap(), b"abcd");
        let mut short: &[u8] = b"lo";
        assert_eq!(read(&mut short, b"hel", 11, Duration::from_secs(1)).await, Err(BodyFault::EndedEarly));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_client_is_cut_off_at_the_bound() {
        let (mut silent, _held) = tokio::io::duplex(64);
        let read = read(&mut silent, b"{", 10, Duration::from_secs(10));
        assert_eq!(read.await, Err(BodyFault::TimedOut));
    }
}
