//! Where tables may live: the URI schemes the library is built to open (one place, used by the
//! directory catalog's root check and by the error mapping of every call that opens, writes or
//! clones a table), and the refusal of any other scheme with `LANCE_ERR_NOT_SUPPORTED`.
//!
//! The schemes are those of the Lance object-store providers compiled in: `s3://` always, the
//! others by the library's Cargo features (`store-azure`, `store-gcs`, `store-oss`, `store-cos`,
//! `store-tos`, `store-hf`, `commit-dynamodb`; all on by default), which turn on the matching
//! features of `lance` and `lance-io`. A path without a scheme, or with a one-letter scheme (a
//! drive letter), is a local path, as in Lance.

/// Every scheme a table URI may carry, with what serves it (for messages and docs/object-storage.md).
pub const SCHEMES: &[(&str, &str)] = &[
    ("file", "local file system"),
    ("s3", "Amazon S3 and S3-compatible stores"),
    #[cfg(feature = "commit-dynamodb")]
    ("s3+ddb", "S3 with commits through a DynamoDB table"),
    #[cfg(feature = "store-azure")]
    ("az", "Azure Blob Storage"),
    #[cfg(feature = "store-azure")]
    ("abfss", "Azure Data Lake Storage Gen2"),
    #[cfg(feature = "store-gcs")]
    ("gs", "Google Cloud Storage"),
    #[cfg(feature = "store-oss")]
    ("oss", "Alibaba Cloud OSS"),
    #[cfg(feature = "store-cos")]
    ("cos", "Tencent Cloud COS"),
    #[cfg(feature = "store-tos")]
    ("tos", "Volcengine TOS"),
    #[cfg(feature = "store-hf")]
    ("hf", "Hugging Face Hub (read-only)"),
    ("memory", "process memory (tests)"),
];

/// The schemes a table URI may carry, comma-separated, for messages.
pub fn scheme_list() -> String {
    SCHEMES.iter().map(|(s, _)| format!("{s}://")).collect::<Vec<_>>().join(", ")
}

/// The scheme of `uri`, or `None` for a local path (no `://`, or a one-letter drive scheme).
pub fn scheme_of(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once("://")?;
    if scheme.len() <= 1 {
        return None;
    }
    Some(scheme)
}

/// `Ok` when `uri` names a local path or a scheme in [`SCHEMES`]; else the message of the
/// refusal (`LANCE_ERR_NOT_SUPPORTED` at the caller: `HostError::unsupported_scheme`), naming
/// the schemes that are supported. `what` names the URI in the message ("table URI").
/// (This module depends on nothing of the crate, so the error module can use it.)
pub fn check_uri(what: &str, uri: &str) -> std::result::Result<(), String> {
    match scheme_of(uri) {
        None => Ok(()),
        Some(s) if SCHEMES.iter().any(|(known, _)| known.eq_ignore_ascii_case(s)) => Ok(()),
        Some(s) => Err(unsupported_message(what, s)),
    }
}

/// The message of a refused scheme.
pub fn unsupported_message(what: &str, scheme: &str) -> String {
    format!(
        "{what} has the storage scheme '{scheme}://', which this build of lance-host cannot open; \
         supported are {} and local paths",
        scheme_list()
    )
}

/// The scheme Lance named in its "No object store provider found for scheme: 'x'" error, when
/// `text` is one (a URI that reached Lance without passing [`check_uri`], e.g. a location a
/// REST catalog returned).
pub fn unknown_scheme_in(text: &str) -> Option<&str> {
    const MARK: &str = "No object store provider found for scheme: '";
    if let Some(at) = text.find(MARK) {
        let start = at + MARK.len();
        let len = text[start..].find('\'')?;
        return Some(&text[start..start + len]);
    }
    // S3 is built in, its DynamoDB commit store is not (`commit-dynamodb`): Lance opens the
    // store and refuses the commit handler
    if text.contains("`s3+ddb://` scheme requires `dynamodb` feature") && !cfg!(feature = "commit-dynamodb") {
        return Some("s3+ddb");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{HostError, LanceErrorCode};

    /// A URI of each scheme a build may have, with the feature that brings it ("" = always).
    const URIS: &[(&str, &str)] = &[
        ("/tmp/t.lance", ""), ("file:///tmp/t.lance", ""), ("s3://b/t", ""), ("S3://b/t", ""), ("C://x", ""),
        ("relative/t", ""), ("memory://t", ""), ("az://c/t", "store-azure"), ("abfss://c@a.dfs.core.windows.net/t", "store-azure"),
        ("gs://b/t", "store-gcs"), ("oss://b/t", "store-oss"), ("cos://b/t", "store-cos"), ("tos://b/t", "store-tos"),
        ("hf://datasets/o/r", "store-hf"), ("s3+ddb://b/t?ddbTableName=x", "commit-dynamodb"),
    ];

    fn enabled(feature: &str) -> bool {
        match feature {
            "" => true,
            "store-azure" => cfg!(feature = "store-azure"),
            "store-gcs" => cfg!(feature = "store-gcs"),
            "store-oss" => cfg!(feature = "store-oss"),
            "store-cos" => cfg!(feature = "store-cos"),
            "store-tos" => cfg!(feature = "store-tos"),
            "store-hf" => cfg!(feature = "store-hf"),
            "commit-dynamodb" => cfg!(feature = "commit-dynamodb"),
            other => panic!("unknown feature {other}"),
        }
    }

    #[test]
    fn schemes_and_local_paths() {
        for &(uri, feature) in URIS {
            let scheme = scheme_of(uri).unwrap_or("(local)");
            match check_uri("table URI", uri) {
                Ok(()) => assert!(enabled(feature), "{uri} accepted without the feature {feature}"),
                Err(m) => {
                    assert!(!enabled(feature), "{uri} refused with the feature {feature}: {m}");
                    assert!(m.contains(&format!("'{scheme}://'")) && m.contains("s3://"), "{m}");
                }
            }
        }
        for (uri, scheme) in [("hdfs://nn:8020/t", "hdfs"), ("abfs://c/t", "abfs"), ("ftp://h/t", "ftp"), ("s3a://b/t", "s3a")] {
            let e = HostError::not_supported(check_uri("table URI", uri).unwrap_err());
            assert_eq!(e.code, LanceErrorCode::LANCE_ERR_NOT_SUPPORTED, "{uri}");
            assert!(e.message.contains(&format!("'{scheme}://'")), "{}", e.message);
            for (s, _) in SCHEMES {
                assert!(e.message.contains(&format!("{s}://")), "{s} missing: {}", e.message);
            }
        }
    }

    /// The list agrees with the stores Lance was built with: every listed scheme has a Lance
    /// provider, and every scheme a Lance provider of this build serves is listed (a store
    /// feature turned on without its entry, or the reverse, fails here in that build).
    #[test]
    fn schemes_match_the_lance_providers_built_in() {
        let registry = lance_io::object_store::ObjectStoreRegistry::default();
        for (s, _) in SCHEMES {
            assert!(registry.get_provider(s).is_some(), "{s}:// listed but Lance has no provider");
        }
        for &(uri, feature) in URIS {
            let Some(scheme) = scheme_of(uri) else { continue };
            let scheme = scheme.to_ascii_lowercase();
            // `s3+ddb` shares the S3 provider; whether it commits depends on `commit-dynamodb`.
            if scheme == "s3+ddb" {
                continue;
            }
            assert_eq!(registry.get_provider(&scheme).is_some(), enabled(feature), "{scheme}://");
        }
    }

    #[test]
    fn lance_scheme_error_is_recognised() {
        let text = "Invalid user input: No object store provider found for scheme: 'hdfs'\nValid schemes: file, s3";
        assert_eq!(unknown_scheme_in(text), Some("hdfs"));
        assert_eq!(unknown_scheme_in("Invalid user input: something else"), None);
        // a build without `commit-dynamodb`: Lance refuses `s3+ddb://` at its commit handler
        let ddb = "Invalid user input: `s3+ddb://` scheme requires `dynamodb` feature to be enabled, /x/commit.rs:1:2";
        assert_eq!(unknown_scheme_in(ddb), (!cfg!(feature = "commit-dynamodb")).then_some("s3+ddb"));
        let e = HostError::unsupported_scheme("open table 'hdfs://x/t'", "hdfs");
        assert_eq!(e.code, LanceErrorCode::LANCE_ERR_NOT_SUPPORTED);
        assert!(e.message.starts_with("open table 'hdfs://x/t': "), "{}", e.message);
    }
}
