//! The REST backend: a Lance REST namespace at an http(s) URL, with optional bearer-token or
//! API-key authentication and extra headers.

use std::collections::HashMap;

use super::Backend;
use crate::error::{HostError, Result};

/// Check the properties of a `type=rest` catalog and make its connector properties.
pub(super) fn backend(props: &HashMap<String, String>, delimiter: &str) -> Result<Backend> {
    if props.contains_key("root") {
        return Err(HostError::invalid("catalog property 'root' does not apply to type=rest (use 'uri')"));
    }
    let uri = props
        .get("uri")
        .ok_or_else(|| HostError::invalid("catalog property 'uri' is required for type=rest"))?;
    let scheme_ok = uri.starts_with("http://") || uri.starts_with("https://");
    if !scheme_ok || uri.len() <= "https://".len() {
        return Err(HostError::invalid(format!(
            "catalog property 'uri' must be an http:// or https:// URL, got '{uri}'"
        )));
    }
    let mut connect_props: HashMap<String, String> = HashMap::new();
    connect_props.insert("uri".into(), uri.trim_end_matches('/').to_string());
    connect_props.insert("delimiter".into(), delimiter.to_string());
    if let Some((name, value)) = auth_header(props)? {
        connect_props.insert(format!("header.{name}"), value);
    }
    for (k, v) in props {
        if let Some(name) = k.strip_prefix("header.") {
            let lower = name.to_ascii_lowercase();
            if lower == "authorization" || lower == "x-api-key" {
                return Err(HostError::invalid(format!(
                    "catalog property '{k}' conflicts with 'auth'; use auth=bearer or auth=api_key"
                )));
            }
            connect_props.insert(format!("header.{name}"), v.clone());
        }
    }
    Ok(Backend {
        kind_name: "rest",
        connect_props,
        local_root: None,
        label: format!("REST catalog '{uri}'"),
    })
}

/// The header `auth` asks for (none, bearer or api_key), after checking that the credential
/// properties match it.
fn auth_header(props: &HashMap<String, String>) -> Result<Option<(&'static str, String)>> {
    let auth = props.get("auth").map(String::as_str).unwrap_or("none");
    let token = props.get("bearer_token");
    let key = props.get("api_key");
    match auth {
        "none" => {
            if token.is_some() {
                return Err(HostError::invalid("catalog property 'bearer_token' requires auth=bearer"));
            }
            if key.is_some() {
                return Err(HostError::invalid("catalog property 'api_key' requires auth=api_key"));
            }
            Ok(None)
        }
        "bearer" => {
            let token = token
                .ok_or_else(|| HostError::invalid("catalog property 'bearer_token' is required for auth=bearer"))?;
            if key.is_some() {
                return Err(HostError::invalid("catalog property 'api_key' contradicts auth=bearer"));
            }
            Ok(Some(("Authorization", format!("Bearer {token}"))))
        }
        "api_key" => {
            let key = key.ok_or_else(|| HostError::invalid("catalog property 'api_key' is required for auth=api_key"))?;
            if token.is_some() {
                return Err(HostError::invalid("catalog property 'bearer_token' contradicts auth=api_key"));
            }
            Ok(Some(("x-api-key", key.clone())))
        }
        other => Err(HostError::invalid(format!(
            "catalog property 'auth' must be none, bearer or api_key, got '{other}'"
        ))),
    }
}
