//! Writes through the library: a catalog's CREATE and DROP TABLE, one-commit writes, staged
//! shares, their commit and their abort.

use std::ptr;

use adbc_core::error::Result;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::RecordBatchReader;

use crate::api::{self, api, c_string, check, Api, CStrArray};
use crate::handles::{Catalog, Dataset, Reader, TableRef};

impl Catalog {
    /// Create `table` holding the rows of `data` (one commit); returns the rows written.
    pub fn create_table(
        &self,
        table: &TableRef,
        data: Box<dyn RecordBatchReader + Send>,
        params: &WriteSettings,
    ) -> Result<u64> {
        let api = api()?;
        let ns = CStrArray::new(&table.namespace, "a namespace name")?;
        let name = c_string(&table.name, "the table name")?;
        let mut stream = FFI_ArrowArrayStream::new(data);
        let p = params.build(api, crate::api::WRITE_CREATE, &[])?;
        let mut result = api::WriteResult {
            struct_size: std::mem::size_of::<api::WriteResult>(),
            ..Default::default()
        };
        // SAFETY: the library takes ownership of `stream` (released also on failure).
        let rc = unsafe {
            (api.lance_catalog_create_table)(
                self.raw,
                ns.as_ptr(),
                ns.len(),
                name.as_ptr(),
                &mut stream,
                &p.params,
                ptr::null_mut(),
                &mut result,
            )
        };
        check(api, rc, &format!("creating table `{}`", table.display()))?;
        Ok(result.rows_written)
    }
}

impl Catalog {
    pub fn drop_table(&self, table: &TableRef) -> Result<()> {
        let api = api()?;
        let ns = CStrArray::new(&table.namespace, "a namespace name")?;
        let name = c_string(&table.name, "the table name")?;
        // SAFETY: live arguments for the call.
        let rc = unsafe {
            (api.lance_catalog_drop_table)(self.raw, ns.as_ptr(), ns.len(), name.as_ptr(), true)
        };
        check(api, rc, &format!("dropping table `{}`", table.display()))
    }
}

/// Write settings the statement carries into `LanceWriteParams`.
#[derive(Clone, Default)]
pub struct WriteSettings {
    pub statement_id: Option<String>,
    pub commit_message: Option<String>,
}

pub struct BuiltParams {
    pub params: api::WriteParams,
    _keep: Vec<std::ffi::CString>,
    _options: Option<CStrArray>,
}

impl WriteSettings {
    pub fn build(&self, api: &Api, mode: i32, storage_options: &[String]) -> Result<BuiltParams> {
        // SAFETY: zeroed then initialised by the library with its defaults.
        let mut params: api::WriteParams = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            (api.lance_write_params_init_v2)(&mut params, std::mem::size_of::<api::WriteParams>())
        };
        check(api, rc, "initialising write parameters")?;
        params.mode = mode;
        let mut keep = Vec::new();
        if let Some(id) = &self.statement_id {
            let c = c_string(id, "the statement id")?;
            params.statement_id = c.as_ptr();
            keep.push(c);
        }
        if let Some(m) = &self.commit_message {
            let c = c_string(m, "the commit message")?;
            params.commit_message = c.as_ptr();
            keep.push(c);
        }
        let options = if storage_options.is_empty() {
            None
        } else {
            let arr = CStrArray::new(storage_options, "a storage option")?;
            params.storage_options = arr.as_ptr();
            Some(arr)
        };
        Ok(BuiltParams {
            params,
            _keep: keep,
            _options: options,
        })
    }
}

/// Write `data` to the table at `uri` in one commit (append or overwrite).
pub fn table_write(
    uri: &str,
    data: Reader,
    mode: i32,
    storage_options: &[String],
    settings: &WriteSettings,
) -> Result<api::WriteResult> {
    let api = api()?;
    let uri_c = c_string(uri, "the table location")?;
    let p = settings.build(api, mode, storage_options)?;
    let mut stream = FFI_ArrowArrayStream::new(data);
    let mut result = api::WriteResult {
        struct_size: std::mem::size_of::<api::WriteResult>(),
        ..Default::default()
    };
    // SAFETY: the library takes `stream`; the rest is borrowed for the call.
    let rc = unsafe {
        (api.lance_table_write)(
            uri_c.as_ptr(),
            ptr::null_mut(),
            &mut stream,
            &p.params,
            ptr::null_mut(),
            &mut result,
        )
    };
    check(api, rc, "writing")?;
    Ok(result)
}

/// Stage a share of a write at `at` (the table's pinned version); returns its bytes.
pub fn stage_write(
    uri: &str,
    at: &Dataset,
    data: Reader,
    mode: i32,
    storage_options: &[String],
) -> Result<(Vec<u8>, u64)> {
    let api = api()?;
    let uri_c = c_string(uri, "the table location")?;
    let p = WriteSettings::default().build(api, mode, storage_options)?;
    let mut stream = FFI_ArrowArrayStream::new(data);
    let mut bytes: *mut u8 = ptr::null_mut();
    let mut len = 0usize;
    let mut result = api::WriteResult {
        struct_size: std::mem::size_of::<api::WriteResult>(),
        ..Default::default()
    };
    // SAFETY: the library takes `stream`; outputs are ours after success.
    let rc = unsafe {
        (api.lance_table_stage_write)(
            uri_c.as_ptr(),
            at.raw,
            &mut stream,
            &p.params,
            &mut bytes,
            &mut len,
            &mut result,
        )
    };
    check(api, rc, "staging a write")?;
    // SAFETY: library-owned bytes copied, then freed once.
    let out = unsafe { std::slice::from_raw_parts(bytes, len).to_vec() };
    unsafe { (api.lance_bytes_free)(bytes, len) };
    Ok((out, result.rows_written))
}

/// Commit staged shares of one table as one version.
pub fn commit_shares(
    uri: &str,
    shares: &[Vec<u8>],
    storage_options: &[String],
    settings: &WriteSettings,
) -> Result<api::WriteResult> {
    let api = api()?;
    let uri_c = c_string(uri, "the table location")?;
    let p = settings.build(api, crate::api::WRITE_APPEND, storage_options)?;
    let ptrs: Vec<*const u8> = shares.iter().map(|s| s.as_ptr()).collect();
    let lens: Vec<usize> = shares.iter().map(|s| s.len()).collect();
    let mut result = api::WriteResult {
        struct_size: std::mem::size_of::<api::WriteResult>(),
        ..Default::default()
    };
    // SAFETY: borrowed arrays for the call.
    let rc = unsafe {
        (api.lance_table_commit)(
            uri_c.as_ptr(),
            ptrs.as_ptr(),
            lens.as_ptr(),
            shares.len(),
            &p.params,
            ptr::null_mut(),
            &mut result,
        )
    };
    check(api, rc, "committing the staged writes")?;
    Ok(result)
}

/// Commit the staged shares of several tables together (`lance_commit_tables`), each table's
/// with its statement id: every table gets one new version or none does. The library refuses (nothing committed) tables that one
/// namespace with batch commits does not manage.
pub fn commit_tables(tables: &[(&str, &[Vec<u8>], &[String], &str)]) -> Result<()> {
    let api = api()?;
    let uris = tables
        .iter()
        .map(|(uri, _, _, _)| c_string(uri, "the table location"))
        .collect::<Result<Vec<_>>>()?;
    let uri_ptrs: Vec<*const std::ffi::c_char> = uris.iter().map(|u| u.as_ptr()).collect();
    let share_ptrs: Vec<Vec<*const u8>> = tables
        .iter()
        .map(|(_, shares, _, _)| shares.iter().map(|s| s.as_ptr()).collect())
        .collect();
    let share_lens: Vec<Vec<usize>> = tables
        .iter()
        .map(|(_, shares, _, _)| shares.iter().map(|s| s.len()).collect())
        .collect();
    let staged: Vec<*const *const u8> = share_ptrs.iter().map(|v| v.as_ptr()).collect();
    let lens: Vec<*const usize> = share_lens.iter().map(|v| v.as_ptr()).collect();
    let counts: Vec<usize> = share_ptrs.iter().map(Vec::len).collect();
    let params = tables
        .iter()
        .map(|(_, _, options, statement_id)| {
            let settings = WriteSettings {
                statement_id: Some(statement_id.to_string()),
                ..Default::default()
            };
            settings.build(api, crate::api::WRITE_APPEND, options)
        })
        .collect::<Result<Vec<_>>>()?;
    let param_ptrs: Vec<*const api::WriteParams> =
        params.iter().map(|p| &p.params as *const _).collect();
    // SAFETY: every array lives until the call returns; no outputs are asked for.
    let rc = unsafe {
        (api.lance_commit_tables)(
            tables.len(),
            uri_ptrs.as_ptr(),
            staged.as_ptr(),
            lens.as_ptr(),
            counts.as_ptr(),
            param_ptrs.as_ptr(),
            ptr::null_mut(),
            ptr::null(),
        )
    };
    check(api, rc, "committing the transaction's tables together")
}

/// Delete the files of staged shares that will not be committed.
pub fn abort_shares(shares: &[Vec<u8>], storage_options: &[String]) -> Result<()> {
    let api = api()?;
    let ptrs: Vec<*const u8> = shares.iter().map(|s| s.as_ptr()).collect();
    let lens: Vec<usize> = shares.iter().map(|s| s.len()).collect();
    let options = CStrArray::new(storage_options, "a storage option")?;
    let mut deleted = 0u64;
    // SAFETY: borrowed arrays for the call.
    let rc = unsafe {
        (api.lance_staged_write_abort)(
            ptrs.as_ptr(),
            lens.as_ptr(),
            shares.len(),
            options.as_ptr(),
            &mut deleted,
        )
    };
    check(api, rc, "discarding the staged writes")
}
