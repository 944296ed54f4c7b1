//! Where tables may live: the URI schemes the library is built to open (one place, used by the
//! directory catalog's root check and by the error mapping of every call that opens, writes or
//! clones a table), and the refusal of any other scheme with `LANCE_ERR_NOT_SUPPORTED`.
//!
//! The schemes are those of the Lance object-store providers compiled in (Cargo features of
//! `lance` and `lance-io`: `aws`, `azure`, `gcp`, `oss`, `tencent`, `tos`, `huggingface`,
//! `dynamodb`). A path without a scheme, or with a one-letter scheme (a drive letter), is a
//! local path, as in Lance.

/// Every scheme a table URI may carry, with what serves it (for messages and docs/object-storage.md).
pub const SCHEMES: &[(&str, &str)] = &[
    ("file", "local file system"),
    ("s3", "Amazon S3 and S3-compatible stores"),
    ("s3+ddb", "S3 with commits through a DynamoDB table"),
    ("az", "Azure Blob Storage"),
    ("abfss", "Azure Data Lake Storage Gen2"),
    ("gs", "Google Cloud Storage"),
    ("oss", "Alibaba Cloud OSS"),
    ("cos", "Tencent Cloud COS"),
    ("tos", "Volcengine TOS"),
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
    let start = text.find(MARK)? + MARK.len();
    let len = text[start..].find('\'')?;
    Some(&text[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{HostError, LanceErrorCode};

    #[test]
    fn schemes_and_local_paths() {
        for uri in ["/tmp/t.lance", "file:///tmp/t.lance", "s3://b/t", "S3://b/t", "az://c/t", "abfss://c@a.dfs.core.windows.net/t",
            "gs://b/t", "oss://b/t", "cos://b/t", "tos://b/t", "hf://datasets/o/r", "s3+ddb://b/t?ddbTableName=x", "C://x", "relative/t"]
        {
            assert!(check_uri("table URI", uri).is_ok(), "{uri}");
        }
        for (uri, scheme) in [("hdfs://nn:8020/t", "hdfs"), ("abfs://c/t", "abfs"), ("ftp://h/t", "ftp"), ("s3a://b/t", "s3a")] {
            let e = HostError::not_supported(check_uri("table URI", uri).unwrap_err());
            assert_eq!(e.code, LanceErrorCode::LANCE_ERR_NOT_SUPPORTED, "{uri}");
            assert!(e.message.contains(&format!("'{scheme}://'")), "{}", e.message);
            assert!(e.message.contains("gs://") && e.message.contains("az://"), "{}", e.message);
        }
    }

    #[test]
    fn lance_scheme_error_is_recognised() {
        let text = "Invalid user input: No object store provider found for scheme: 'hdfs'\nValid schemes: file, s3";
        assert_eq!(unknown_scheme_in(text), Some("hdfs"));
        assert_eq!(unknown_scheme_in("Invalid user input: something else"), None);
        let e = HostError::unsupported_scheme("open table 'hdfs://x/t'", "hdfs");
        assert_eq!(e.code, LanceErrorCode::LANCE_ERR_NOT_SUPPORTED);
        assert!(e.message.starts_with("open table 'hdfs://x/t': "), "{}", e.message);
    }
}
