//! Keeping secrets (tokens, API keys, secret storage options) out of error messages.

use crate::error::HostError;

/// Storage-option keys whose values are secrets.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["secret", "token", "password", "credential", "access_key", "api_key", "sas", "signature"]
        .iter()
        .any(|s| k.contains(s))
        || k.ends_with("_key")
}

/// Header names whose values are secrets.
pub fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "authorization" || n.contains("token") || n.contains("key") || n.contains("secret") || n == "cookie"
}

/// A set of secret values that must never appear in a message.
#[derive(Debug, Clone, Default)]
pub struct Secrets(Vec<String>);

impl Secrets {
    pub fn add(&mut self, value: &str) {
        // Very short values would redact ordinary words; they are not credentials anyway.
        if value.len() >= 4 && !self.0.iter().any(|v| v == value) {
            self.0.push(value.to_string());
            self.0.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    /// Collect the secret values of a storage-option map.
    pub fn from_storage_options(options: &std::collections::HashMap<String, String>) -> Self {
        let mut s = Secrets::default();
        for (k, v) in options {
            if is_secret_key(k) {
                s.add(v);
            }
        }
        s
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.0 {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[REDACTED]");
            }
        }
        out
    }

    pub fn scrub(&self, mut err: HostError) -> HostError {
        err.message = self.redact(&err.message);
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced() {
        let mut s = Secrets::default();
        s.add("hunter2-secret");
        assert_eq!(s.redact("token=hunter2-secret!"), "token=[REDACTED]!");
        assert!(is_secret_key("aws_secret_access_key"));
        assert!(is_secret_key("aws_session_token"));
        assert!(!is_secret_key("aws_region"));
        assert!(is_secret_header("Authorization"));
    }
}
