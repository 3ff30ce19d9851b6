//! SHA-1, only to reproduce the CLI's registry key
//! (`sha1(<playwright-core dir>).hex[..16]`); not used for anything secret.

use ::sha1::{Digest as _, Sha1};

/// Lower-case hex of the SHA-1 of `data`, as Node's `digest("hex")`.
pub fn hex(data: &[u8]) -> String {
    Sha1::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::hex;

    #[test]
    fn known_vectors() {
        assert_eq!(hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        assert_eq!(hex(&vec![b'a'; 1_000_000]), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    }

    #[test]
    fn the_cli_registry_key_measured_here() {
        // `sha1sum` of the playwright-core directory of a real install; the
        // daemon named its directory `5f140579e5662630` for it.
        let core = "/root/.cache/playpen/npm/playwright-cli-0.1.22/node_modules/playwright-core";
        assert_eq!(&hex(core.as_bytes())[..16], "5f140579e5662630");
    }
}
