//! Error type of the safe layer and its mapping to the C error codes.

use std::fmt;

/// Error codes returned by every fallible C function.
///
/// Values are explicit and never reused: a host may store or switch on them.
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LanceErrorCode {
    /// Success.
    LANCE_OK = 0,
    /// A pointer was NULL, a string was not UTF-8, or a value was out of range or unknown
    /// (for example an unknown column or a wrong vector dimension).
    LANCE_ERR_INVALID_ARGUMENT = 1,
    /// A table, version, fragment, namespace, index or row does not exist.
    LANCE_ERR_NOT_FOUND = 2,
    /// Reading from storage failed (local file system or object store).
    LANCE_ERR_IO = 3,
    /// The request is valid but not supported by this library or this table.
    LANCE_ERR_NOT_SUPPORTED = 4,
    /// A bug or an unexpected state inside the library or Lance.
    LANCE_ERR_INTERNAL = 5,
    /// A Rust panic was caught at the boundary; the library stays usable.
    LANCE_ERR_PANIC = 6,
    /// The call is not allowed in the current state (for example configuring the session
    /// after it has started).
    LANCE_ERR_FAILED_PRECONDITION = 7,
    /// Credentials are missing or were rejected.
    LANCE_ERR_UNAUTHENTICATED = 8,
    /// Credentials were accepted but do not grant access.
    LANCE_ERR_PERMISSION_DENIED = 9,
    /// Stored data could not be decoded (corrupt file, corrupt split bytes).
    LANCE_ERR_CORRUPT = 10,
    /// An operation did not finish within its time bound (a call context's deadline, a
    /// catalog timeout).
    LANCE_ERR_TIMEOUT = 11,
    /// The operation was cancelled by the host (`lance_stream_cancel`,
    /// `lance_call_context_cancel`).
    LANCE_ERR_CANCELLED = 12,
    /// A commit lost to a concurrent writer whose change it cannot be combined with (for
    /// example an overwrite that raced another commit): nothing of this commit is visible.
    /// The message names the version the work was planned at and the version that conflicted.
    /// Since 0.6.
    LANCE_ERR_CONFLICT = 13,
    /// The host's own input stream failed: its `get_next` returned an error, or it broke the
    /// stream contract (a batch of another schema than the stream's). The message carries the
    /// stream's own error. Nothing of the write is committed. Since 0.11 (these were
    /// LANCE_ERR_INTERNAL or LANCE_ERR_INVALID_ARGUMENT before).
    LANCE_ERR_HOST_STREAM = 14,
    /// A result does not fit its type: an integer SUM beyond the range of int64 (uint64 for
    /// unsigned columns), a decimal SUM or AVG beyond 38 digits. The library never returns a
    /// wrapped value. Since 0.12 (decimals since 0.15).
    LANCE_ERR_OUT_OF_RANGE = 15,
}

/// The error of the safe layer: a code and a message that says what was wrong with this call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    pub code: LanceErrorCode,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, HostError>;

impl HostError {
    pub fn new(code: LanceErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: readable(message.into()),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(LanceErrorCode::LANCE_ERR_NOT_FOUND, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(LanceErrorCode::LANCE_ERR_INTERNAL, message)
    }
    pub fn precondition(message: impl Into<String>) -> Self {
        Self::new(LanceErrorCode::LANCE_ERR_FAILED_PRECONDITION, message)
    }
    pub fn not_supported(message: impl Into<String>) -> Self {
        Self::new(LanceErrorCode::LANCE_ERR_NOT_SUPPORTED, message)
    }

    /// Lance's "no provider for this scheme" error as the library reports it: `NOT_SUPPORTED`
    /// with the supported schemes, prefixed by `context`.
    pub fn unsupported_scheme(context: &str, scheme: &str) -> Self {
        Self::not_supported(crate::storage::unsupported_message("the table location", scheme)).context(context)
    }

    /// Map a Lance error (namespace errors by their namespace error code), prefixing the
    /// message with what the library was doing.
    pub fn from_lance(context: &str, err: lance::Error) -> Self {
        if let Some(ns) = namespace_source(&err) {
            // a server's message may carry its source location (Lance's REST adapter sends them)
            return Self::new(namespace_code(ns), format!("{context}: {}", strip_location(ns.message())));
        }
        let code = lance_error_code(&err);
        if let Some(scheme) = crate::storage::unknown_scheme_in(&err.to_string()) {
            return Self::unsupported_scheme(context, scheme);
        }
        if let Some(e) = missing_tokenizer(context, &err.to_string()) {
            return e;
        }
        let text = summarize_s3_xml(&without_internal_fields(&strip_location(&err.to_string())));
        Self::new(code, format!("{context}: {text}"))
    }

    /// Object stores print local paths without their leading '/': give the paths under the
    /// local table `uri` theirs back (no change for other tables).
    pub fn with_local_paths(mut self, uri: &str) -> Self {
        self.message = local_paths(uri, &self.message);
        self
    }

    /// A failure reported by the query engine as text (DataFusion wraps Lance's errors): the
    /// caller's input when Lance said so ("Invalid user input"), else storage; source locations
    /// and debug dumps removed.
    pub fn from_engine(context: &str, e: impl fmt::Display) -> HostError {
        let text = e.to_string();
        if let Some(e) = missing_tokenizer(context, &text) {
            return e;
        }
        let code = if text.contains("Invalid user input:") {
            LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT
        } else {
            LanceErrorCode::LANCE_ERR_IO
        };
        HostError::new(code, format!("{context}: {}", strip_location(&text)))
    }

    /// Prefix the message with more context, keeping the code.
    pub fn context(mut self, context: &str) -> Self {
        self.message = readable(format!("{context}: {}", self.message));
        self
    }
}

/// `word` with its indefinite article, for messages: "an append", "an IVF_FLAT", "a create".
pub fn with_article(word: &str) -> String {
    let vowel = word.chars().next().is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} {word}", if vowel { "an" } else { "a" })
}

/// `text` with the paths of the local table `uri` that lost their leading '/' (the object-store
/// form) written as the host knows them; `text` unchanged for other tables.
pub fn local_paths(uri: &str, text: &str) -> String {
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    if uri.contains("://") && !uri.starts_with("file://") || !path.starts_with('/') || path.len() < 2 {
        return text.to_string();
    }
    let rel = &path[1..];
    let hold = "\u{1}";
    text.replace(path, hold).replace(rel, path).replace(hold, path)
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for HostError {}

/// The tokenizers a build may lack: (prefix of Lance's tokenizer name, the Cargo feature, built in).
const OPTIONAL_TOKENIZERS: &[(&str, &str, bool)] = &[
    ("jieba", "tokenizer-jieba", cfg!(feature = "tokenizer-jieba")),
    ("lindera", "tokenizer-lindera", cfg!(feature = "tokenizer-lindera")),
];

/// Lance's "unknown base tokenizer <name>" for a tokenizer this build was compiled without, as
/// `NOT_SUPPORTED` naming the feature (an index written elsewhere with jieba or lindera, searched
/// or updated through a build without it). With the feature built in, Lance says the same when it
/// finds no language-model directory; that message stays as it is.
fn missing_tokenizer(context: &str, text: &str) -> Option<HostError> {
    const MARK: &str = "unknown base tokenizer ";
    let start = text.find(MARK)? + MARK.len();
    let name: String = text[start..].chars().take_while(|c| !c.is_whitespace() && *c != ',' && *c != ')').collect();
    let (_, feature, _) = OPTIONAL_TOKENIZERS.iter().find(|(prefix, _, built)| {
        !built && (name == *prefix || name.starts_with(&format!("{prefix}/")))
    })?;
    Some(HostError::not_supported(format!(
        "{context}: the full-text index uses the tokenizer '{name}', which this build of lance-host does not \
         have (it was built without the Cargo feature `{feature}`)"
    )))
}

fn namespace_source(err: &lance::Error) -> Option<&lance_namespace::error::NamespaceError> {
    match err {
        lance::Error::Namespace { source, .. } => source.downcast_ref(),
        lance::Error::Shared { source } => namespace_source(source),
        _ => None,
    }
}

fn namespace_code(err: &lance_namespace::error::NamespaceError) -> LanceErrorCode {
    use lance_namespace::error::ErrorCode as C;
    use LanceErrorCode::*;
    match err.code() {
        C::NamespaceNotFound
        | C::TableNotFound
        | C::TableVersionNotFound
        | C::TableIndexNotFound
        | C::TableTagNotFound
        | C::TableBranchNotFound
        | C::TableColumnNotFound
        | C::TransactionNotFound => LANCE_ERR_NOT_FOUND,
        C::Unauthenticated => LANCE_ERR_UNAUTHENTICATED,
        C::PermissionDenied => LANCE_ERR_PERMISSION_DENIED,
        C::ServiceUnavailable | C::Throttling => LANCE_ERR_IO,
        C::InvalidInput
        | C::NamespaceAlreadyExists
        | C::NamespaceNotEmpty
        | C::TableAlreadyExists
        | C::TableSchemaValidationError => LANCE_ERR_INVALID_ARGUMENT,
        C::ConcurrentModification => LANCE_ERR_CONFLICT,
        C::Unsupported => LANCE_ERR_NOT_SUPPORTED,
        _ => LANCE_ERR_INTERNAL,
    }
}

fn lance_error_code(err: &lance::Error) -> LanceErrorCode {
    use lance::Error as E;
    use LanceErrorCode::*;
    match err {
        E::InvalidInput { .. }
        | E::Schema { .. }
        | E::FieldNotFound { .. }
        | E::SchemaMismatch { .. }
        | E::InvalidRef { .. }
        | E::InvalidTableLocation { .. }
        | E::DatasetAlreadyExists { .. } => LANCE_ERR_INVALID_ARGUMENT,
        E::DatasetNotFound { .. }
        | E::NotFound { .. }
        | E::IndexNotFound { .. }
        | E::RefNotFound { .. }
        | E::VersionNotFound { .. } => LANCE_ERR_NOT_FOUND,
        E::IO { .. } => io_error_code(err),
        E::NotSupported { .. } => LANCE_ERR_NOT_SUPPORTED,
        E::CorruptFile { .. } => LANCE_ERR_CORRUPT,
        E::Timeout { .. } => LANCE_ERR_TIMEOUT,
        // a branch other branches were created from, a tag or branch name already taken:
        // the table's references forbid the call, nothing is wrong with the call itself
        E::RefConflict { .. } => LANCE_ERR_FAILED_PRECONDITION,
        E::CommitConflict { .. }
        | E::IncompatibleTransaction { .. }
        | E::RetryableCommitConflict { .. }
        | E::TooMuchWriteContention { .. } => LANCE_ERR_CONFLICT,
        // DataFusion carries Lance's own InvalidInput through as text (a phrase query on an
        // index built without positions): still the caller's input.
        E::Wrapped { .. } | E::External { .. } if err.to_string().contains("Invalid user input:") => {
            LANCE_ERR_INVALID_ARGUMENT
        }
        E::Wrapped { .. } | E::External { .. } => io_error_code(err),
        E::Shared { source } => lance_error_code(source),
        // a second index under a name in use (Lance's default name included): the caller's choice
        E::Index { message, .. } if message.contains("already exists") => LANCE_ERR_INVALID_ARGUMENT,
        _ => LANCE_ERR_INTERNAL,
    }
}

/// Object-store failures arrive as IO errors; recognise rejected credentials by their text.
fn io_error_code(err: &lance::Error) -> LanceErrorCode {
    let text = err.to_string().to_ascii_lowercase();
    let transport = text.contains("error sending request")
        || text.contains("connection refused")
        || text.contains("timed out")
        || text.contains("dns error");
    if transport {
        LanceErrorCode::LANCE_ERR_IO
    } else if has_status(&text, "403")
        || text.contains("forbidden")
        || text.contains("accessdenied")
        || text.contains("access denied")
        || text.contains("permission denied")
    {
        LanceErrorCode::LANCE_ERR_PERMISSION_DENIED
    } else if has_status(&text, "401")
        || text.contains("unauthorized")
        || text.contains("unauthenticated")
        || text.contains("invalidaccesskeyid")
        || text.contains("signaturedoesnotmatch")
        || text.contains("invalidtoken")
        || text.contains("expiredtoken")
    {
        LanceErrorCode::LANCE_ERR_UNAUTHENTICATED
    } else if text.contains("not found") || text.contains("nosuchkey") || text.contains("nosuchbucket") {
        LanceErrorCode::LANCE_ERR_NOT_FOUND
    } else {
        LanceErrorCode::LANCE_ERR_IO
    }
}

/// Whether `text` holds the HTTP status `code` as a number of its own (not inside a port or
/// a duration).
fn has_status(text: &str, code: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(code).any(|(i, _)| {
        let before = if i == 0 { b' ' } else { bytes[i - 1] };
        let after = bytes.get(i + code.len()).copied().unwrap_or(b' ');
        !before.is_ascii_alphanumeric()
            && before != b':'
            && before != b'.'
            && !after.is_ascii_alphanumeric()
            && after != b'.'
    })
}

/// Lance appends the Rust source location (`, lance/src/x.rs:12:5`) to its messages, also in
/// the middle of a message wrapped by another; it means nothing to a host, so drop every one.
/// Lance's debug dump of a schema (`Schema { fields: [...] }`) is cut to its field names.
fn strip_location(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(pos) = rest.find(", ") {
        let tail = &rest[pos + 2..];
        let end = tail.find(|c: char| c.is_whitespace() || c == ',').unwrap_or(tail.len());
        let word = tail[..end].trim_end_matches([')', ']', '}']);
        let looks_like_location = word.contains(".rs:")
            && word.rsplit(':').take(2).all(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_digit()));
        out.push_str(&rest[..pos]);
        if looks_like_location {
            rest = &tail[word.len()..];
        } else {
            out.push_str(", ");
            rest = tail;
        }
    }
    out.push_str(rest);
    schema_dump_names(&out)
}

/// `text` with each `Schema { fields: [Field { name: "a", ... }, ...] ... }` replaced by the
/// field names, `[a, b]`.
fn schema_dump_names(text: &str) -> String {
    let Some(start) = text.find("Schema { fields: [") else { return text.to_string() };
    let bytes = text.as_bytes();
    let mut depth = 0i32;
    let mut end = None;
    for (i, b) in bytes.iter().enumerate().skip(start) {
        match b {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(end) = end else { return text.to_string() };
    let dump = &text[start..end];
    // Top-level fields only: names at the first nesting level of the field list.
    let mut names = Vec::new();
    let mut level = 0i32;
    let mut i = 0;
    let d = dump.as_bytes();
    while i < d.len() {
        match d[i] {
            b'{' | b'[' | b'(' => level += 1,
            b'}' | b']' | b')' => level -= 1,
            _ => {}
        }
        if level == 3 && dump[i..].starts_with("name: \"") {
            let from = i + "name: \"".len();
            if let Some(len) = dump[from..].find('"') {
                names.push(dump[from..from + len].to_string());
                i = from + len;
            }
        }
        i += 1;
    }
    format!("{}[{}]{}", &text[..start], names.join(", "), schema_dump_names(&text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokenizer_left_out_of_the_build_is_not_supported() {
        for (name, prefix, feature, built) in [
            ("jieba/default", "jieba", "tokenizer-jieba", cfg!(feature = "tokenizer-jieba")),
            ("jieba", "jieba", "tokenizer-jieba", cfg!(feature = "tokenizer-jieba")),
            ("lindera/ipadic", "lindera", "tokenizer-lindera", cfg!(feature = "tokenizer-lindera")),
        ] {
            let text = format!("Invalid user input: unknown base tokenizer {name}, /x/lance-index/src/a.rs:1:2");
            assert!(name.starts_with(prefix));
            match missing_tokenizer("full-text search", &text) {
                Some(e) => {
                    assert!(!built, "{name}: built in, yet reported missing");
                    assert_eq!(e.code, LanceErrorCode::LANCE_ERR_NOT_SUPPORTED);
                    assert!(e.message.starts_with("full-text search: ") && e.message.contains(&format!("'{name}'")), "{}", e.message);
                    assert!(e.message.contains(feature), "{}", e.message);
                }
                None => assert!(built, "{name}: left out of the build, yet not reported"),
            }
            let e = HostError::from_engine("full-text search", &text);
            assert_eq!(e.code == LanceErrorCode::LANCE_ERR_NOT_SUPPORTED, !built, "{}", e.message);
        }
        // tokenizers every build has, and other messages, are never rewritten
        for text in ["Invalid user input: unknown base tokenizer whitespace2", "Invalid user input: jieba dictionary missing",
            "unknown base tokenizer jiebax"] {
            assert!(missing_tokenizer("x", text).is_none(), "{text}");
        }
    }

    #[test]
    fn http_status_is_not_found_inside_ports() {
        assert!(!has_status("get http://127.0.0.1:44035/x", "403"));
        assert!(!has_status("in 101.4039ms", "403"));
        assert!(has_status("server responded 403 forbidden", "403"));
        assert!(has_status("status: (403)", "403"));
    }

    #[test]
    fn strips_trailing_source_locations() {
        assert_eq!(
            strip_location("Not found: x, /a/b/src/c.rs:10:3, d/e.rs:1:2"),
            "Not found: x"
        );
        assert_eq!(strip_location("plain, message"), "plain, message");
        assert_eq!(
            strip_location("External error: bad input, /x/lance-index/src/p.rs:12:9, then more"),
            "External error: bad input, then more"
        );
    }

    #[test]
    fn schema_dumps_become_field_names() {
        let dump = r#"Column 'nope' does not exist in dataset schema: Schema { fields: [Field { name: "id", id: 0, children: [] }, Field { name: "s", children: [Field { name: "inner", children: [] }] }], metadata: {} }"#;
        assert_eq!(strip_location(dump), "Column 'nope' does not exist in dataset schema: [id, s]");
    }
}

/// Longest message kept whole; longer ones (e.g. echoing a 1 MB filter) keep their start and
/// end and say how much was cut.
pub const MAX_MESSAGE_BYTES: usize = 2048;

fn readable(message: String) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut head = MAX_MESSAGE_BYTES * 3 / 4;
    while !message.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = message.len() - MAX_MESSAGE_BYTES / 8;
    while !message.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{} … [{} bytes omitted] … {}",
        &message[..head],
        tail - head,
        &message[tail..]
    )
}

/// Lance lists "Valid fields are ..." with its internal row-metadata columns among them
/// (`_row_created_at_version`, `_rowoffset`, ...); a host can only ask for `_rowid` and
/// `_rowaddr`, so the other internal names are dropped from the list.
fn without_internal_fields(message: &str) -> String {
    const MARK: &str = "Valid fields are ";
    let Some(start) = message.find(MARK).map(|i| i + MARK.len()) else {
        return message.to_string();
    };
    let end = message[start..]
        .find(|c: char| c == '.' || c == '\n')
        .map(|i| start + i)
        .unwrap_or(message.len());
    let kept: Vec<&str> = message[start..end]
        .split(", ")
        .filter(|f| {
            let f = f.trim();
            !f.starts_with('_') || f == "_rowid" || f == "_rowaddr"
        })
        .collect();
    format!("{}{}{}", &message[..start], kept.join(", "), &message[end..])
}

/// S3 errors carry the server's whole XML body (request ids, host ids); keep what a host needs:
/// the S3 error code, its message and the bucket or object.
fn summarize_s3_xml(message: &str) -> String {
    let Some(open) = message.find("<Error>") else {
        return message.to_string();
    };
    let Some(close) = message[open..].find("</Error>").map(|i| open + i + "</Error>".len()) else {
        return message.to_string();
    };
    let start = message[..open].rfind("<?xml").unwrap_or(open);
    let body = &message[open..close];
    let tag = |name: &str| -> Option<&str> {
        let a = body.find(&format!("<{name}>"))? + name.len() + 2;
        let b = body[a..].find(&format!("</{name}>"))? + a;
        Some(&body[a..b])
    };
    let mut summary = format!("S3 error {}", tag("Code").unwrap_or("(no code)"));
    if let Some(m) = tag("Message") {
        summary.push_str(&format!(": {m}"));
    }
    if let Some(k) = tag("Key").or(tag("Resource")).or(tag("BucketName")) {
        summary.push_str(&format!(" ({k})"));
    }
    format!("{}{}{}", message[..start].trim_end(), if start > 0 { " " } else { "" }, summary)
        + &message[close..]
}
