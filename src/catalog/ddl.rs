//! Catalog writes: create and drop namespaces, create (as a first write) and drop tables. The
//! read operations are in the parent module; these go through the same namespace connector,
//! time bound and secret scrubbing.

use std::collections::HashMap;

use lance_namespace::models::{
    CreateNamespaceRequest, DeclareTableRequest, DropNamespaceRequest, DropTableRequest, TableExistsRequest,
};

use super::{run_bounded, Catalog};
use crate::error::{HostError, LanceErrorCode, Result};
use crate::snapshot::Snapshot;
use crate::write::Batches;
use crate::write::{table, WriteMode, WriteOptions, WriteSummary};

impl Catalog {
    fn child_id(&self, ns: &[String], name: &str, what: &str) -> Result<Vec<String>> {
        if name.is_empty() {
            return Err(HostError::invalid(format!("{what} name is empty")));
        }
        if name.contains(self.delimiter.as_str()) {
            return Err(HostError::invalid(format!(
                "{what} name '{name}' contains the catalog's delimiter '{}'",
                self.delimiter
            )));
        }
        let mut id = self.full_id(ns)?;
        id.push(name.to_string());
        Ok(id)
    }

    /// Create namespace `ns` (relative to the catalog's parent; its parent must exist; a
    /// directory catalog's root directory is created if missing).
    /// `exist_ok`: an existing namespace is fine. `properties` are stored with it.
    pub fn create_namespace(&self, ns: &[String], exist_ok: bool, properties: HashMap<String, String>) -> Result<()> {
        let Some((name, parent)) = ns.split_last() else {
            return Err(HostError::invalid("the root namespace always exists: give a namespace to create"));
        };
        // (a directory catalog's root that does not exist yet is created, as by pylance)
        let id = self.child_id(parent, name, "namespace")?;
        let what = format!("cannot create namespace '{}' in the {}", self.display(&id), self.label);
        let namespace = self.namespace.clone();
        let props = (!properties.is_empty()).then_some(properties);
        let create_id = id.clone();
        let created = run_bounded(self.timeout, &self.secrets, &what, async move {
            let mut req = CreateNamespaceRequest::new();
            (req.id, req.properties) = (Some(create_id), props);
            namespace.create_namespace(req).await
        });
        match created {
            Ok(_) => Ok(()),
            Err(e) if e.code == LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT && self.namespace_exists(&id)? => {
                if exist_ok {
                    Ok(())
                } else {
                    Err(HostError::invalid(format!("{what}: it already exists (create it with exist_ok to accept that)")))
                }
            }
            Err(e) => Err(e),
        }
    }

    fn namespace_exists(&self, id: &[String]) -> Result<bool> {
        let namespace = self.namespace.clone();
        let id = id.to_vec();
        let found = run_bounded(self.timeout, &self.secrets, "cannot check a namespace", async move {
            super::ensure_namespace(namespace.as_ref(), &id).await
        });
        match found {
            Ok(()) => Ok(true),
            Err(e) if e.code == LanceErrorCode::LANCE_ERR_NOT_FOUND => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Drop namespace `ns`. Without `cascade` it must be empty (LANCE_ERR_INVALID_ARGUMENT
    /// otherwise); with it, its tables (data included) and child namespaces go first.
    /// `missing_ok`: a namespace that does not exist is fine.
    pub fn drop_namespace(&self, ns: &[String], cascade: bool, missing_ok: bool) -> Result<()> {
        if ns.is_empty() {
            return Err(HostError::invalid("the root namespace cannot be dropped"));
        }
        self.check_root()?;
        self.full_id(ns)?;
        let gone = |e: &HostError| missing_ok && e.code == LanceErrorCode::LANCE_ERR_NOT_FOUND;
        if cascade {
            let children = match self.list_namespaces(ns, true) {
                Err(e) if gone(&e) => return Ok(()),
                other => other?,
            };
            // deepest first, so every namespace is empty when it is dropped
            let mut all = children;
            all.push(ns.to_vec());
            all.sort_by_key(|p| std::cmp::Reverse(p.len()));
            for path in &all {
                for table in self.list_tables(path)? {
                    self.drop_table(path, &table, true)?;
                }
                if path != ns {
                    self.drop_one_namespace(path)?;
                }
            }
        }
        match self.drop_one_namespace(ns) {
            Err(e) if gone(&e) => Ok(()),
            other => other,
        }
        .map_err(|e| {
            if e.code == LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT && (e.message.contains("not empty") || e.message.contains("child objects")) {
                HostError::new(
                    e.code,
                    format!("{} (drop its tables and namespaces first, or drop with cascade)", e.message),
                )
            } else {
                e
            }
        })
    }

    fn drop_one_namespace(&self, ns: &[String]) -> Result<()> {
        let id = self.full_id(ns)?;
        let what = format!("cannot drop namespace '{}' of the {}", self.display(&id), self.label);
        let namespace = self.namespace.clone();
        run_bounded(self.timeout, &self.secrets, &what, async move {
            let mut req = DropNamespaceRequest::new();
            req.id = Some(id);
            namespace.drop_namespace(req).await
        })
        .map(|_| ())
    }

    /// Create table `name` in namespace `ns` from `data` (CREATE TABLE ... AS): the namespace
    /// declares the table and gives its location, and the rows are written there as version 1
    /// (`options.mode` is ignored: always a create). If the write fails, the declaration is
    /// withdrawn: the catalog is as it was. Returns the table pinned at version 1.
    pub fn create_table(&self, ns: &[String], name: &str, data: Batches, options: &WriteOptions) -> Result<(Snapshot, WriteSummary)> {
        options.validate()?;
        let id = self.child_id(ns, name, "table")?;
        let what = format!("cannot create table '{}' in the {}", self.display(&id), self.label);
        let namespace = self.namespace.clone();
        let declare_id = id.clone();
        let declared = run_bounded(self.timeout, &self.secrets, &what, async move {
            let mut req = DeclareTableRequest::new();
            req.id = Some(declare_id);
            namespace.declare_table(req).await
        })?;
        let location = declared
            .location
            .ok_or_else(|| HostError::internal(format!("{what}: the namespace returned no location")))?;
        let location = match location.strip_prefix("file://") {
            Some(path) if path.starts_with('/') => path.to_string(),
            _ => location,
        };
        if declared.managed_versioning == Some(true) {
            // the first version is registered through the namespace like every later one
            crate::snapshot::managed::register(&location, self.namespace.clone(), id.clone());
        }
        let mut write_options = options.clone();
        write_options.mode = WriteMode::Create;
        let mut storage = self.storage_options.clone();
        storage.extend(declared.storage_options.unwrap_or_default());
        storage.extend(options.storage_options.clone());
        write_options.storage_options = storage;
        match table::write(&location, None, data, &write_options) {
            Ok(done) => Ok(done),
            Err(e) => {
                // withdraw the declaration (and whatever the failed write left)
                let _ = self.drop_table(ns, name, true);
                Err(self.secrets.scrub(HostError::new(e.code, format!("{what}: {}", e.message))))
            }
        }
    }

    /// Drop table `name` of namespace `ns`: it leaves the catalog and its data is deleted.
    /// `missing_ok`: a table that does not exist is fine.
    pub fn drop_table(&self, ns: &[String], name: &str, missing_ok: bool) -> Result<()> {
        self.check_root()?;
        let id = self.child_id(ns, name, "table")?;
        let what = format!("cannot drop table '{}' of the {}", self.display(&id), self.label);
        let namespace = self.namespace.clone();
        let dropped = run_bounded(self.timeout, &self.secrets, &what, async move {
            let mut exists = TableExistsRequest::new();
            exists.id = Some(id.clone());
            namespace.table_exists(exists).await?;
            let mut req = DropTableRequest::new();
            req.id = Some(id);
            namespace.drop_table(req).await
        });
        match dropped {
            Err(e) if missing_ok && e.code == LanceErrorCode::LANCE_ERR_NOT_FOUND => Ok(()),
            Ok(resp) => {
                if let Some(location) = resp.location.as_deref() {
                    crate::snapshot::managed::forget(location);
                }
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
