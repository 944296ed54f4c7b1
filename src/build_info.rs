//! What this build of the library carries: its optional Cargo features (object stores beyond S3,
//! the DynamoDB commit store, the CJK tokenizers, the allocator), for hosts that check at
//! start-up what they loaded (`lance_host_build_features`).

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

/// Every optional feature of the crate, with whether this build has it (Cargo.toml's `[features]`).
pub const FEATURES: &[(&str, bool)] = &[
    ("store-azure", cfg!(feature = "store-azure")),
    ("store-gcs", cfg!(feature = "store-gcs")),
    ("store-oss", cfg!(feature = "store-oss")),
    ("store-cos", cfg!(feature = "store-cos")),
    ("store-tos", cfg!(feature = "store-tos")),
    ("store-hf", cfg!(feature = "store-hf")),
    ("commit-dynamodb", cfg!(feature = "commit-dynamodb")),
    ("tokenizer-jieba", cfg!(feature = "tokenizer-jieba")),
    ("tokenizer-lindera", cfg!(feature = "tokenizer-lindera")),
    ("mimalloc", cfg!(feature = "mimalloc")),
];

/// The features of this build, comma-separated, in [`FEATURES`]' order ("" when it has none).
pub fn features() -> &'static CStr {
    static TEXT: OnceLock<CString> = OnceLock::new();
    TEXT.get_or_init(|| {
        let on: Vec<&str> = FEATURES.iter().filter(|(_, built)| *built).map(|(name, _)| *name).collect();
        CString::new(on.join(",")).expect("feature names have no NUL")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list agrees with Cargo.toml: every optional feature is listed once (so a feature added
    /// there without an entry here fails), and the text holds exactly the ones built in.
    #[test]
    fn features_match_the_manifest() {
        let manifest = include_str!("../Cargo.toml");
        let section = manifest.split("\n[features]\n").nth(1).unwrap().split("\n[").next().unwrap();
        let declared: Vec<&str> = section
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(" = "))
            .map(|l| l.split(" = ").next().unwrap().trim())
            .filter(|name| *name != "default")
            .collect();
        let listed: Vec<&str> = FEATURES.iter().map(|(n, _)| *n).collect();
        assert_eq!(declared, listed);
        let text = features().to_str().unwrap();
        for (name, built) in FEATURES {
            assert_eq!(text.split(',').any(|f| f == *name), *built, "{name} in {text:?}");
        }
    }
}
