//! The directory backend: a Lance directory namespace under a root (an absolute path,
//! `file://` or `s3://`), with the storage options of its tables.

use std::collections::HashMap;

use super::Backend;
use crate::error::{HostError, Result};

/// Check the properties of a `type=dir` catalog and make its connector properties.
pub(super) fn backend(props: &HashMap<String, String>, storage_options: &HashMap<String, String>) -> Result<Backend> {
    for key in ["uri", "auth", "bearer_token", "api_key"] {
        if props.contains_key(key) {
            return Err(HostError::invalid(format!("catalog property '{key}' does not apply to type=dir")));
        }
    }
    if let Some(h) = props.keys().find(|k| k.starts_with("header.")) {
        return Err(HostError::invalid(format!("catalog property '{h}' does not apply to type=dir")));
    }
    let root = props
        .get("root")
        .ok_or_else(|| HostError::invalid("catalog property 'root' is required for type=dir"))?;
    validate_dir_root(root)?;
    let mut connect_props: HashMap<String, String> = HashMap::new();
    connect_props.insert("root".into(), root.clone());
    for (k, v) in storage_options {
        connect_props.insert(format!("storage.{k}"), v.clone());
    }
    let local_root = if !root.contains("://") {
        Some(root.into())
    } else {
        root.strip_prefix("file://").map(Into::into)
    };
    Ok(Backend {
        kind_name: "dir",
        connect_props,
        local_root,
        label: format!("directory catalog '{root}'"),
    })
}

fn validate_dir_root(root: &str) -> Result<()> {
    if root.is_empty() {
        return Err(HostError::invalid("catalog property 'root' is empty"));
    }
    if let Some(scheme) = crate::storage::scheme_of(root) {
        crate::storage::check_uri("catalog property 'root'", root).map_err(HostError::not_supported)?;
        if root.split_once("://").is_some_and(|(_, rest)| rest.is_empty()) {
            return Err(HostError::invalid(format!("catalog property 'root' has no path after '{scheme}://'")));
        }
        Ok(())
    } else if std::path::Path::new(root).is_absolute() {
        Ok(())
    } else {
        Err(HostError::invalid(format!(
            "catalog property 'root' must be an absolute path or a URI ({}), got relative path '{root}'",
            crate::storage::scheme_list()
        )))
    }
}
