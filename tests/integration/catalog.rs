//! Catalogs: directory warehouses (plain and manifest layouts) and a real REST namespace
//! server (Lance's REST adapter behind an auth-enforcing proxy) on 127.0.0.1.

use std::ffi::CStr;
use std::sync::OnceLock;

use lance_host::ffi::catalog::*;
use lance_host::ffi::dataset::*;
use lance_host::LanceErrorCode::{self, *};
use lance_host_rest_server::{AuthConfig, ServerHandle};

use crate::common::*;

const SENTINEL: &str = "SENTINEL-s3cr3t-7f1e9a";

/// A runtime of its own for test servers (never the library's).
fn server_runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    })
}

fn start_server(auth: AuthConfig) -> ServerHandle {
    let root = fixture().facts.get("nested.root").to_string();
    server_runtime()
        .block_on(lance_host_rest_server::start(&root, auth))
        .expect("start REST server")
}

/// Owned catalog handle.
struct Cat(*mut LanceCatalog);
impl Drop for Cat {
    fn drop(&mut self) {
        lance_catalog_free(self.0);
    }
}

fn try_open(pairs: &[(&str, &str)]) -> Result<Cat, (i32, String)> {
    let (_keep, ptrs) = kv(pairs);
    let p = lance_catalog_open(ptrs.as_ptr());
    if p.is_null() {
        Err((last_code(), last_message()))
    } else {
        Ok(Cat(p))
    }
}

fn open(pairs: &[(&str, &str)]) -> Cat {
    try_open(pairs).unwrap_or_else(|e| panic!("catalog open failed: {e:?}"))
}

fn namespaces(cat: &Cat, ns: &[&str], recursive: bool) -> Result<Vec<Vec<String>>, (i32, String)> {
    let parts = cstrs(ns);
    let mut list = std::ptr::null_mut();
    let code = lance_catalog_list_namespaces(cat.0, parts.ptrs.as_ptr(), ns.len(), recursive, &mut list);
    if code != 0 {
        return Err((code, last_message()));
    }
    let mut out = Vec::new();
    for i in 0..lance_namespace_list_count(list) {
        let depth = lance_namespace_list_depth(list, i);
        out.push(
            (0..depth)
                .map(|j| unsafe { CStr::from_ptr(lance_namespace_list_part(list, i, j)) }
                    .to_str()
                    .unwrap()
                    .to_string())
                .collect(),
        );
    }
    lance_namespace_list_free(list);
    Ok(out)
}

fn tables(cat: &Cat, ns: &[&str]) -> Result<Vec<String>, (i32, String)> {
    let parts = cstrs(ns);
    let mut list = std::ptr::null_mut();
    let code = lance_catalog_list_tables(cat.0, parts.ptrs.as_ptr(), ns.len(), &mut list);
    if code != 0 {
        return Err((code, last_message()));
    }
    let out = (0..lance_string_list_count(list))
        .map(|i| unsafe { CStr::from_ptr(lance_string_list_get(list, i)) }.to_str().unwrap().to_string())
        .collect();
    lance_string_list_free(list);
    Ok(out)
}

fn open_table(cat: &Cat, ns: &[&str], table: &str, version: u64) -> Result<Ds, (i32, String)> {
    let parts = cstrs(ns);
    let t = cstr(table);
    let p = lance_catalog_open_table(cat.0, parts.ptrs.as_ptr(), ns.len(), t.as_ptr(), version);
    if p.is_null() {
        Err((last_code(), last_message()))
    } else {
        Ok(Ds(p))
    }
}

fn rows(ds: &Ds) -> u64 {
    let mut n = 0;
    assert_eq!(lance_dataset_count_rows(ds.ptr(), &mut n), 0);
    n
}

#[track_caller]
fn expect_err<T>(r: Result<T, (i32, String)>, code: LanceErrorCode, needle: &str) -> String {
    match r {
        Ok(_) => panic!("expected {code:?} mentioning {needle:?}, got success"),
        Err((c, msg)) => {
            assert_eq!(c, code as i32, "{msg}");
            assert!(msg.contains(needle), "{msg:?} does not mention {needle:?}");
            msg
        }
    }
}

fn nested_expected_tables(ns: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = lance_host_testkit::nested_tables()
        .into_iter()
        .filter(|(p, _, _)| p.as_slice() == ns)
        .map(|(_, n, _)| n)
        .collect();
    v.sort();
    v
}

fn paths(items: &[&[&str]]) -> Vec<Vec<String>> {
    let mut v: Vec<Vec<String>> = items
        .iter()
        .map(|p| p.iter().map(|s| s.to_string()).collect())
        .collect();
    v.sort();
    v
}

#[test]
fn dir_catalog_plain_layout() {
    let f = &fixture().facts;
    let root = fixture().root.to_str().unwrap().to_string();
    let cat = open(&[("root", &root)]);
    // Every table the testkit wrote at the root (facts "<table>.uri").
    let mut expected: Vec<String> = f
        .0
        .keys()
        .filter_map(|k| k.strip_suffix(".uri"))
        .map(str::to_string)
        .collect();
    expected.sort();
    assert!(expected.len() >= 3);
    assert_eq!(tables(&cat, &[]).unwrap(), expected);
    assert!(namespaces(&cat, &[], false).unwrap().is_empty());

    let parts = cstrs(&[]);
    let t = cstr("people");
    let mut info = std::ptr::null_mut();
    assert_eq!(lance_catalog_describe_table(cat.0, parts.ptrs.as_ptr(), 0, t.as_ptr(), &mut info), 0, "{}", last_message());
    let location = unsafe { CStr::from_ptr(lance_table_info_location(info)) }.to_str().unwrap().to_string();
    assert!(location.trim_end_matches('/').ends_with("people.lance"), "{location}");
    assert_eq!(lance_table_info_latest_version(info), f.get_u64("people.versions"));
    // The vended options open the table directly.
    let loc = cstr(&location);
    let ds = lance_dataset_open(loc.as_ptr(), lance_table_info_storage_options(info), 0);
    assert!(!ds.is_null(), "{}", last_message());
    assert_eq!(rows(&Ds(ds)), f.get_u64("people.v3.rows"));
    lance_table_info_free(info);

    let v1 = open_table(&cat, &[], "people", 1).unwrap();
    assert_eq!(lance_dataset_version(v1.ptr()), 1);
    assert_eq!(rows(&v1), f.get_u64("people.v1.rows"));
    // A file:// root works too, and every table's location has one form: an absolute path.
    let cat2 = open(&[("type", "dir"), ("root", &format!("file://{root}"))]);
    assert_eq!(tables(&cat2, &[]).unwrap(), expected);
    for c in [&cat, &cat2] {
        for name in &expected {
            let t = cstr(name);
            let mut info = std::ptr::null_mut();
            assert_eq!(lance_catalog_describe_table(c.0, parts.ptrs.as_ptr(), 0, t.as_ptr(), &mut info), 0, "{}", last_message());
            let location = unsafe { CStr::from_ptr(lance_table_info_location(info)) }.to_str().unwrap().to_string();
            assert!(location.starts_with('/') && !location.contains("://"), "{name}: {location}");
            lance_table_info_free(info);
        }
    }
    // A root that does not exist is NOT_FOUND, not an empty catalog.
    let missing = format!("{root}/no-such-dir");
    for r in [missing.clone(), format!("file://{missing}")] {
        let cat3 = open(&[("root", &r)]);
        let e = tables(&cat3, &[]).unwrap_err();
        assert_eq!(e.0, LANCE_ERR_NOT_FOUND as i32, "{e:?}");
        assert!(e.1.contains("no-such-dir"), "{e:?}");
        assert_eq!(namespaces(&cat3, &[], false).unwrap_err().0, LANCE_ERR_NOT_FOUND as i32);
    }
}

#[test]
fn dir_catalog_manifest_layout_and_parent() {
    let f = &fixture().facts;
    let root = f.get("nested.root").to_string();
    let cat = open(&[("root", &root)]);
    assert_eq!(namespaces(&cat, &[], false).unwrap(), paths(&[&["bulk"], &["prod"], &["staging"]]));
    let all: Vec<&[&str]> = lance_host_testkit::NESTED_NAMESPACES.to_vec();
    assert_eq!(namespaces(&cat, &[], true).unwrap(), paths(&all));
    assert_eq!(namespaces(&cat, &["prod"], false).unwrap(), paths(&[&["prod", "analytics"]]));
    assert_eq!(tables(&cat, &[]).unwrap(), nested_expected_tables(&[]));
    assert_eq!(tables(&cat, &["prod", "analytics"]).unwrap(), nested_expected_tables(&["prod", "analytics"]));
    let clicks = open_table(&cat, &["prod", "analytics"], "clicks", 0).unwrap();
    assert_eq!(rows(&clicks), f.get_u64("nested.prod$analytics$clicks.rows"));

    // Scoped to a parent: paths are relative to it.
    let scoped = open(&[("root", &root), ("parent", "prod")]);
    assert_eq!(namespaces(&scoped, &[], false).unwrap(), paths(&[&["analytics"]]));
    assert_eq!(
        namespaces(&scoped, &[], true).unwrap(),
        paths(&[&["analytics"], &["analytics", "daily"]])
    );
    assert_eq!(tables(&scoped, &[]).unwrap(), nested_expected_tables(&["prod"]));
    let rollup = open_table(&scoped, &["analytics", "daily"], "rollup", 0).unwrap();
    assert_eq!(rows(&rollup), f.get_u64("nested.prod$analytics$daily$rollup.rows"));
    // A custom delimiter.
    let scoped2 = open(&[("root", &root), ("parent", "prod/analytics"), ("delimiter", "/")]);
    assert_eq!(tables(&scoped2, &[]).unwrap(), nested_expected_tables(&["prod", "analytics"]));
}

#[test]
fn dir_catalog_pages_are_followed() {
    let root = fixture().facts.get("nested.root").to_string();
    let cat = open(&[("root", &root), ("page_size", "2")]);
    let bulk = tables(&cat, &["bulk"]).unwrap();
    assert_eq!(bulk, nested_expected_tables(&["bulk"]));
    assert!(bulk.len() > 2);
    assert_eq!(namespaces(&cat, &[], false).unwrap().len(), 3);
}

#[test]
fn catalog_not_found() {
    let root = fixture().facts.get("nested.root").to_string();
    let cat = open(&[("root", &root)]);
    expect_err(tables(&cat, &["nope_ns"]), LANCE_ERR_NOT_FOUND, "nope_ns");
    expect_err(namespaces(&cat, &["prod", "nope_child"], false), LANCE_ERR_NOT_FOUND, "nope_child");
    expect_err(open_table(&cat, &["prod"], "missing_table", 0), LANCE_ERR_NOT_FOUND, "missing_table");
    let parts = cstrs(&["prod"]);
    let t = cstr("missing_table");
    let mut info = std::ptr::null_mut();
    assert_err(
        lance_catalog_describe_table(cat.0, parts.ptrs.as_ptr(), 1, t.as_ptr(), &mut info),
        LANCE_ERR_NOT_FOUND,
        "missing_table",
    );
    assert!(info.is_null());
    // A version that does not exist.
    expect_err(open_table(&cat, &["prod"], "orders", 77), LANCE_ERR_NOT_FOUND, "77");
    // Bad arguments.
    let mut list = std::ptr::null_mut();
    assert_err(
        lance_catalog_list_tables(cat.0, std::ptr::null(), 2, &mut list),
        LANCE_ERR_INVALID_ARGUMENT,
        "namespace",
    );
    assert_err(
        lance_catalog_list_tables(std::ptr::null(), std::ptr::null(), 0, &mut list),
        LANCE_ERR_INVALID_ARGUMENT,
        "catalog",
    );
    let empty = cstrs(&[""]);
    assert_err(
        lance_catalog_list_tables(cat.0, empty.ptrs.as_ptr(), 1, &mut list),
        LANCE_ERR_INVALID_ARGUMENT,
        "empty",
    );
    assert!(lance_string_list_get(std::ptr::null(), 0).is_null());
    lance_string_list_free(std::ptr::null_mut());
    lance_namespace_list_free(std::ptr::null_mut());
    lance_table_info_free(std::ptr::null_mut());
    lance_catalog_free(std::ptr::null_mut());
}

#[test]
fn invalid_properties_name_the_key() {
    let root = fixture().root.to_str().unwrap().to_string();
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (vec![("root", &root), ("colour", "blue")], "colour"),
        (vec![("type", "dir")], "root"),
        (vec![("root", "relative/path")], "root"),
        (vec![("type", "rest"), ("root", &root)], "root"),
        (vec![("type", "rest")], "uri"),
        (vec![("type", "rest"), ("uri", "ftp://x")], "uri"),
        (vec![("type", "rest"), ("uri", "http://127.0.0.1:1"), ("auth", "bearer")], "bearer_token"),
        (vec![("type", "rest"), ("uri", "http://127.0.0.1:1"), ("auth", "api_key")], "api_key"),
        (vec![("type", "rest"), ("uri", "http://127.0.0.1:1"), ("bearer_token", SENTINEL)], "bearer_token"),
        (vec![("type", "rest"), ("uri", "http://127.0.0.1:1"), ("auth", "kerberos")], "auth"),
        (vec![("type", "rest"), ("uri", "http://127.0.0.1:1"), ("header.Authorization", SENTINEL)], "header.Authorization"),
        (vec![("type", "lake"), ("root", &root)], "type"),
        (vec![("root", &root), ("header.X-A", "b")], "header.X-A"),
        (vec![("root", &root), ("auth", "bearer")], "auth"),
        (vec![("root", &root), ("timeout_ms", "soon")], "timeout_ms"),
        (vec![("root", &root), ("page_size", "0")], "page_size"),
        (vec![("root", &root), ("parent", "a$$b")], "parent"),
    ];
    for (props, key) in cases {
        let msg = expect_err(try_open(&props), LANCE_ERR_INVALID_ARGUMENT, key);
        assert!(!msg.contains(SENTINEL), "{msg}");
    }
    // A root on a store this build cannot open: NOT_SUPPORTED, naming the ones it can.
    let msg = expect_err(try_open(&[("root", "hdfs://namenode/x")]), LANCE_ERR_NOT_SUPPORTED, "root");
    assert!(msg.contains("'hdfs://'") && msg.contains("gs://") && msg.contains("az://"), "{msg}");
    // NULL properties = empty = missing root.
    assert!(lance_catalog_open(std::ptr::null()).is_null());
    assert_err(last_code(), LANCE_ERR_INVALID_ARGUMENT, "root");
}

#[test]
fn rest_catalog_with_bearer_token_and_headers() {
    let f = &fixture().facts;
    let server = start_server(AuthConfig {
        bearer_token: Some(SENTINEL.to_string()),
        ..Default::default()
    });
    let uri = server.uri();
    let cat = open(&[
        ("type", "rest"),
        ("uri", &uri),
        ("auth", "bearer"),
        ("bearer_token", SENTINEL),
        ("header.X-Engine", "doris-be"),
        ("page_size", "3"),
    ]);
    assert_eq!(namespaces(&cat, &[], false).unwrap(), paths(&[&["bulk"], &["prod"], &["staging"]]));
    let all: Vec<&[&str]> = lance_host_testkit::NESTED_NAMESPACES.to_vec();
    assert_eq!(namespaces(&cat, &[], true).unwrap(), paths(&all));
    let before = server.observed_paths().len();
    assert_eq!(tables(&cat, &["bulk"]).unwrap(), nested_expected_tables(&["bulk"]));
    // 7 tables with 3 per page: at least 3 list requests.
    let list_calls = server.observed_paths()[before..]
        .iter()
        .filter(|p| p.contains("/table/list"))
        .count();
    assert!(list_calls >= 3, "pages were not followed: {list_calls} list calls");
    let clicks = open_table(&cat, &["prod", "analytics"], "clicks", 0).unwrap();
    assert_eq!(rows(&clicks), f.get_u64("nested.prod$analytics$clicks.rows"));
    let mut o = default_opts();
    o.limit = 5;
    assert_eq!(total_rows(&scan(&clicks, &o).unwrap()), 5);
    // The server saw the token and the custom header on every request.
    let seen = server.observed_headers();
    assert!(!seen.is_empty());
    for h in &seen {
        assert_eq!(h.get("x-engine").map(String::as_str), Some("doris-be"));
        assert_eq!(h.get("authorization").cloned(), Some(format!("Bearer {SENTINEL}")));
    }
    expect_err(tables(&cat, &["nope_ns"]), LANCE_ERR_NOT_FOUND, "nope_ns");
    expect_err(open_table(&cat, &["prod"], "ghost", 0), LANCE_ERR_NOT_FOUND, "ghost");

    // Scoped to a parent over REST.
    let scoped = open(&[
        ("type", "rest"),
        ("uri", &uri),
        ("auth", "bearer"),
        ("bearer_token", SENTINEL),
        ("parent", "prod$analytics"),
    ]);
    assert_eq!(tables(&scoped, &[]).unwrap(), ["clicks"]);
    assert_eq!(namespaces(&scoped, &[], false).unwrap(), paths(&[&["daily"]]));
}

#[test]
fn rest_catalog_rejects_bad_credentials_without_leaking_them() {
    let server = start_server(AuthConfig {
        bearer_token: Some("right-token-1234".to_string()),
        api_key: Some("right-key-5678".to_string()),
        forbidden_token: Some(format!("{SENTINEL}-forbidden")),
        ..Default::default()
    });
    let uri = server.uri();
    let mut messages = Vec::new();
    // Wrong bearer token.
    let cat = open(&[("type", "rest"), ("uri", &uri), ("auth", "bearer"), ("bearer_token", SENTINEL)]);
    messages.push(expect_err(tables(&cat, &[]), LANCE_ERR_UNAUTHENTICATED, ""));
    messages.push(expect_err(open_table(&cat, &[], "top", 0), LANCE_ERR_UNAUTHENTICATED, ""));
    // No credentials at all.
    let cat = open(&[("type", "rest"), ("uri", &uri)]);
    messages.push(expect_err(namespaces(&cat, &[], false), LANCE_ERR_UNAUTHENTICATED, ""));
    // Wrong API key, then the right one.
    let cat = open(&[("type", "rest"), ("uri", &uri), ("auth", "api_key"), ("api_key", SENTINEL)]);
    messages.push(expect_err(tables(&cat, &[]), LANCE_ERR_UNAUTHENTICATED, ""));
    let good = open(&[("type", "rest"), ("uri", &uri), ("auth", "api_key"), ("api_key", "right-key-5678")]);
    assert_eq!(tables(&good, &[]).unwrap(), nested_expected_tables(&[]));
    assert!(server
        .observed_headers()
        .iter()
        .any(|h| h.get("x-api-key").map(String::as_str) == Some("right-key-5678")));
    // Authenticated but not allowed.
    let forbidden = format!("{SENTINEL}-forbidden");
    let cat = open(&[("type", "rest"), ("uri", &uri), ("auth", "bearer"), ("bearer_token", &forbidden)]);
    messages.push(expect_err(tables(&cat, &[]), LANCE_ERR_PERMISSION_DENIED, ""));
    for m in &messages {
        assert!(!m.contains(SENTINEL), "secret leaked: {m}");
    }
}

#[test]
fn rest_catalog_unreachable_and_silent_servers() {
    // Nothing listens on this port: IO, promptly.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let uri = format!("http://127.0.0.1:{port}");
    let start = std::time::Instant::now();
    let cat = open(&[("type", "rest"), ("uri", &uri), ("auth", "bearer"), ("bearer_token", SENTINEL)]);
    let msg = expect_err(tables(&cat, &[]), LANCE_ERR_IO, "");
    assert!(!msg.contains(SENTINEL), "{msg}");
    assert!(start.elapsed() < std::time::Duration::from_secs(20));

    // A server that accepts but never answers: IO after the configured bound.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let cat = open(&[("type", "rest"), ("uri", &uri), ("timeout_ms", "500")]);
    let start = std::time::Instant::now();
    expect_err(tables(&cat, &[]), LANCE_ERR_IO, "timed out");
    let took = start.elapsed();
    assert!(took >= std::time::Duration::from_millis(450) && took < std::time::Duration::from_secs(10), "{took:?}");
    drop(silent);
}

#[test]
fn secret_storage_options_never_appear_in_errors() {
    // An s3 warehouse behind an endpoint where nothing listens.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let endpoint = format!("http://127.0.0.1:{port}");
    let result = try_open(&[
        ("root", "s3://no-bucket/warehouse"),
        ("storage.aws_access_key_id", SENTINEL),
        ("storage.aws_secret_access_key", SENTINEL),
        ("storage.aws_endpoint", &endpoint),
        ("storage.aws_region", "us-east-1"),
        ("storage.allow_http", "true"),
        ("storage.client_max_retries", "0"),
        ("timeout_ms", "5000"),
    ]);
    let msg = match result {
        Err((_, m)) => m,
        Ok(cat) => tables(&cat, &[]).expect_err("listing an unreachable s3 root succeeded").1,
    };
    assert!(!msg.contains(SENTINEL), "secret leaked: {msg}");
    // Opening a dataset directly with secret options behaves the same.
    let uri = cstr("s3://no-bucket/t.lance");
    let (_keep, ptrs) = kv(&[
        ("aws_access_key_id", SENTINEL),
        ("aws_secret_access_key", SENTINEL),
        ("aws_endpoint", &endpoint),
        ("aws_region", "us-east-1"),
        ("allow_http", "true"),
        ("client_max_retries", "0"),
    ]);
    assert!(lance_dataset_open(uri.as_ptr(), ptrs.as_ptr(), 0).is_null());
    assert!(!last_message().contains(SENTINEL), "{}", last_message());
}

#[test]
fn vended_storage_options_override_the_catalogs_own() {
    let root = fixture().facts.get("nested.root").to_string();
    let backend: std::collections::HashMap<String, String> = [
        ("storage.allow_http", "false"),
        ("vend_input_storage_options", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let server = server_runtime()
        .block_on(lance_host_rest_server::start_with_backend(&root, AuthConfig::default(), backend))
        .unwrap();
    let uri = server.uri();
    let cat = open(&[
        ("type", "rest"),
        ("uri", &uri),
        ("storage.allow_http", "true"),
        ("storage.block_size", "8192"),
    ]);
    let parts = cstrs(&["prod"]);
    let t = cstr("orders");
    let mut info = std::ptr::null_mut();
    assert_eq!(lance_catalog_describe_table(cat.0, parts.ptrs.as_ptr(), 1, t.as_ptr(), &mut info), 0, "{}", last_message());
    let mut options = std::collections::HashMap::new();
    let mut p = lance_table_info_storage_options(info);
    unsafe {
        while !(*p).is_null() {
            let k = CStr::from_ptr(*p).to_str().unwrap().to_string();
            let v = CStr::from_ptr(*p.add(1)).to_str().unwrap().to_string();
            options.insert(k, v);
            p = p.add(2);
        }
    }
    lance_table_info_free(info);
    assert_eq!(options.get("allow_http").map(String::as_str), Some("false"), "vended value wins: {options:?}");
    assert_eq!(options.get("block_size").map(String::as_str), Some("8192"), "catalog's own option kept: {options:?}");
    let ds = open_table(&cat, &["prod"], "orders", 0).unwrap();
    assert_eq!(rows(&ds), fixture().facts.get_u64("nested.prod$orders.rows"));
}

/// A stream of `n` rows of (id, name) in two batches; with `fail`, an error after the first.
fn id_rows(n: i64, fail: bool) -> arrow::ffi_stream::FFI_ArrowArrayStream {
    use arrow::array::{Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    let schema = std::sync::Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    let batch = |r: std::ops::Range<i64>| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                std::sync::Arc::new(Int64Array::from_iter_values(r.clone())),
                std::sync::Arc::new(StringArray::from_iter_values(r.map(|i| format!("n{i}")))),
            ],
        )
        .unwrap()
    };
    let half = n / 2;
    let second = if fail {
        Err(arrow::error::ArrowError::ComputeError("the host's operator failed".into()))
    } else {
        Ok(batch(half..n))
    };
    let batches = vec![Ok(batch(0..half)), second];
    arrow::ffi_stream::FFI_ArrowArrayStream::new(Box::new(arrow::record_batch::RecordBatchIterator::new(batches, schema)))
}

fn create_table(cat: &Cat, ns: &[&str], table: &str, n: i64, fail: bool) -> Result<(Ds, u64), (i32, String)> {
    use lance_host::ffi::write::LanceWriteResult;
    let parts = cstrs(ns);
    let t = cstr(table);
    let mut data = id_rows(n, fail);
    let mut out = std::ptr::null_mut();
    let mut r = LanceWriteResult { struct_size: std::mem::size_of::<LanceWriteResult>(), ..Default::default() };
    let code = lance_catalog_create_table(cat.0, parts.ptrs.as_ptr(), ns.len(), t.as_ptr(), &mut data, std::ptr::null(), &mut out, &mut r);
    assert!(data.release.is_none(), "the library takes the stream");
    if code != 0 {
        return Err((code, last_message()));
    }
    Ok((Ds(out), r.rows_written))
}

fn create_ns(cat: &Cat, ns: &[&str], exist_ok: bool) -> Result<(), (i32, String)> {
    let parts = cstrs(ns);
    match lance_catalog_create_namespace(cat.0, parts.ptrs.as_ptr(), ns.len(), exist_ok, std::ptr::null()) {
        0 => Ok(()),
        code => Err((code, last_message())),
    }
}

fn drop_ns(cat: &Cat, ns: &[&str], cascade: bool, missing_ok: bool) -> Result<(), (i32, String)> {
    let parts = cstrs(ns);
    match lance_catalog_drop_namespace(cat.0, parts.ptrs.as_ptr(), ns.len(), cascade, missing_ok) {
        0 => Ok(()),
        code => Err((code, last_message())),
    }
}

fn drop_table(cat: &Cat, ns: &[&str], table: &str, missing_ok: bool) -> Result<(), (i32, String)> {
    let parts = cstrs(ns);
    let t = cstr(table);
    match lance_catalog_drop_table(cat.0, parts.ptrs.as_ptr(), ns.len(), t.as_ptr(), missing_ok) {
        0 => Ok(()),
        code => Err((code, last_message())),
    }
}

/// CREATE / DROP of namespaces and tables, the same through a directory and a REST catalog.
fn ddl_round_trip(cat: &Cat) {
    create_ns(cat, &["sales"], false).unwrap();
    expect_err(create_ns(cat, &["sales"], false), LANCE_ERR_INVALID_ARGUMENT, "sales");
    create_ns(cat, &["sales"], true).unwrap();
    create_ns(cat, &["sales", "eu"], false).unwrap();
    expect_err(create_ns(cat, &["nope", "child"], false), LANCE_ERR_NOT_FOUND, "nope");
    expect_err(create_ns(cat, &[], false), LANCE_ERR_INVALID_ARGUMENT, "root");
    assert_eq!(namespaces(cat, &[], true).unwrap(), paths(&[&["sales"], &["sales", "eu"]]));

    let (orders, written) = create_table(cat, &["sales", "eu"], "orders", 300, false).unwrap();
    assert_eq!((written, rows(&orders), lance_dataset_version(orders.ptr())), (300, 300, 1));
    assert_eq!(tables(cat, &["sales", "eu"]).unwrap(), vec!["orders".to_string()]);
    assert_eq!(rows(&open_table(cat, &["sales", "eu"], "orders", 0).unwrap()), 300);
    expect_err(create_table(cat, &["sales", "eu"], "orders", 10, false), LANCE_ERR_INVALID_ARGUMENT, "orders");
    assert_eq!(rows(&open_table(cat, &["sales", "eu"], "orders", 0).unwrap()), 300, "the existing table is untouched");
    // a host stream that fails halfway: nothing is left in the catalog
    let (code, msg) = create_table(cat, &["sales", "eu"], "broken", 100, true).unwrap_err();
    assert_ne!(code, 0);
    assert!(msg.contains("the host's operator failed"), "{msg}");
    assert_eq!(tables(cat, &["sales", "eu"]).unwrap(), vec!["orders".to_string()]);
    expect_err(open_table(cat, &["sales", "eu"], "broken", 0), LANCE_ERR_NOT_FOUND, "broken");
    // the name can be used again afterwards
    create_table(cat, &["sales", "eu"], "broken", 10, false).unwrap();
    drop_table(cat, &["sales", "eu"], "broken", false).unwrap();

    expect_err(drop_ns(cat, &["sales"], false, false), LANCE_ERR_INVALID_ARGUMENT, "cascade");
    drop_table(cat, &["sales", "eu"], "orders", false).unwrap();
    expect_err(open_table(cat, &["sales", "eu"], "orders", 0), LANCE_ERR_NOT_FOUND, "orders");
    expect_err(drop_table(cat, &["sales", "eu"], "orders", false), LANCE_ERR_NOT_FOUND, "orders");
    drop_table(cat, &["sales", "eu"], "orders", true).unwrap();
    assert_eq!(rows(&orders), 300, "a handle opened before the drop still reads from its cache or files");

    create_table(cat, &["sales", "eu"], "returns", 20, false).unwrap();
    create_table(cat, &["sales"], "targets", 20, false).unwrap();
    drop_ns(cat, &["sales"], true, false).unwrap();
    assert!(namespaces(cat, &[], true).unwrap().is_empty());
    expect_err(drop_ns(cat, &["sales"], false, false), LANCE_ERR_NOT_FOUND, "sales");
    drop_ns(cat, &["sales"], true, true).unwrap();
}

#[test]
fn dir_catalog_creates_and_drops_namespaces_and_tables() {
    let root = tempfile::tempdir().unwrap().keep();
    let cat = open(&[("type", "dir"), ("root", root.to_str().unwrap())]);
    ddl_round_trip(&cat);
}

#[test]
fn rest_catalog_creates_and_drops_namespaces_and_tables() {
    let root = tempfile::tempdir().unwrap().keep();
    let server = server_runtime()
        .block_on(lance_host_rest_server::start(root.to_str().unwrap(), AuthConfig::default()))
        .expect("start REST server");
    let cat = open(&[("type", "rest"), ("uri", &server.uri())]);
    ddl_round_trip(&cat);
    // what the REST catalog created is in the directory the server serves
    let dir = open(&[("type", "dir"), ("root", root.to_str().unwrap())]);
    let rest = open(&[("type", "rest"), ("uri", &server.uri())]);
    create_ns(&rest, &["shared"], false).unwrap();
    create_table(&rest, &["shared"], "t", 50, false).unwrap();
    assert_eq!(rows(&open_table(&dir, &["shared"], "t", 0).unwrap()), 50);
}

/// A REST namespace that manages its tables' versions (this repo's server over a directory
/// namespace with version tracking): through the C ABI, a table created through the catalog,
/// a one-call append on its handle and a staged commit by URI each register their version with
/// the namespace (one `create_table_version` each, seen by the server), and the catalog's latest
/// is the namespace's.
#[test]
fn managed_versions_commit_through_the_namespace() {
    use lance_host::ffi::write::LanceWriteMode;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    let backend: std::collections::HashMap<String, String> =
        [("table_version_tracking_enabled".to_string(), "true".to_string())].into_iter().collect();
    let server = server_runtime()
        .block_on(lance_host_rest_server::start_with_backend(&root, AuthConfig::default(), backend))
        .unwrap();
    let creates = || server.observed_paths().iter().filter(|p| p.ends_with("/version/create")).count();
    let cat = open(&[("type", "rest"), ("uri", &server.uri())]);
    let (v1, _) = create_table(&cat, &[], "t", 10, false).unwrap();
    assert_eq!(creates(), 1, "the first version is registered: {:?}", server.observed_paths());
    let uri = unsafe { CStr::from_ptr(lance_host::ffi::dataset::lance_dataset_uri(v1.ptr())) }.to_str().unwrap().to_string();
    let (v2, r) = crate::write::write(&uri, v1.ptr(), vec![crate::write::rows(10..20)], &crate::write::params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
    assert_eq!((r.version, creates()), (2, 2));
    let share = crate::write::stage(&uri, v2.ptr(), vec![crate::write::rows(20..25)], &crate::write::params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
    let (_, r) = crate::write::commit(&uri, &[share], &crate::write::params(LanceWriteMode::LANCE_WRITE_APPEND)).unwrap();
    assert_eq!((r.version, creates()), (3, 3));
    let latest = open_table(&cat, &[], "t", 0).unwrap();
    assert_eq!(rows(&latest), 25);
}

/// Call `lance_commit_tables` for `(uri, shares)` per table with default params; the new
/// versions' numbers.
fn commit_tables(tables: &[(&str, &[Vec<u8>])]) -> Result<Vec<u64>, (i32, String)> {
    use lance_host::ffi::write::{lance_commit_tables, LanceWriteResult};
    let uris: Vec<std::ffi::CString> = tables.iter().map(|(u, _)| cstr(u)).collect();
    let uri_ptrs: Vec<*const std::ffi::c_char> = uris.iter().map(|u| u.as_ptr()).collect();
    let ptrs: Vec<Vec<*const u8>> = tables.iter().map(|(_, s)| s.iter().map(|b| b.as_ptr()).collect()).collect();
    let lens: Vec<Vec<usize>> = tables.iter().map(|(_, s)| s.iter().map(|b| b.len()).collect()).collect();
    let ptr_ptrs: Vec<*const *const u8> = ptrs.iter().map(|p| p.as_ptr()).collect();
    let len_ptrs: Vec<*const usize> = lens.iter().map(|l| l.as_ptr()).collect();
    let counts: Vec<usize> = tables.iter().map(|(_, s)| s.len()).collect();
    let mut outs = vec![std::ptr::null_mut(); tables.len()];
    let mut results: Vec<LanceWriteResult> = (0..tables.len())
        .map(|_| LanceWriteResult { struct_size: std::mem::size_of::<LanceWriteResult>(), ..Default::default() })
        .collect();
    let result_ptrs: Vec<*mut LanceWriteResult> = results.iter_mut().map(|r| r as *mut _).collect();
    let code = lance_commit_tables(
        tables.len(),
        uri_ptrs.as_ptr(),
        ptr_ptrs.as_ptr(),
        len_ptrs.as_ptr(),
        counts.as_ptr(),
        std::ptr::null(),
        outs.as_mut_ptr(),
        result_ptrs.as_ptr(),
    );
    if code != 0 {
        assert!(outs.iter().all(|p| p.is_null()), "no output on failure");
        return Err((code, last_message()));
    }
    let versions: Vec<u64> = results.iter().map(|r| r.version).collect();
    for (p, v) in outs.into_iter().zip(&versions) {
        let ds = Ds(p);
        assert_eq!(lance_dataset_version(ds.ptr()), *v, "the pinned handle is the new version");
    }
    Ok(versions)
}

/// Multi-table commits through the C ABI: against this repo's REST server with batch commits,
/// two tables' shares land in one `batch_commit_tables` request (no per-table version
/// requests), each table one version; against a namespace that manages versions without batch
/// commits, LANCE_ERR_NOT_SUPPORTED with nothing committed; bad arguments are clear errors.
#[test]
fn several_tables_commit_together_through_a_batch_namespace() {
    use lance_host::ffi::write::{lance_commit_tables, LanceWriteMode};
    let append = crate::write::params(LanceWriteMode::LANCE_WRITE_APPEND);
    for batch in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap().to_string();
        let tracking: std::collections::HashMap<String, String> =
            [("table_version_tracking_enabled".to_string(), "true".to_string())].into_iter().collect();
        let server = server_runtime()
            .block_on(lance_host_rest_server::start_with(&root, AuthConfig::default(), tracking, batch))
            .unwrap();
        let cat = open(&[("type", "rest"), ("uri", &server.uri())]);
        let (a, _) = create_table(&cat, &[], "a", 10, false).unwrap();
        let (b, _) = create_table(&cat, &[], "b", 10, false).unwrap();
        let uri_of = |ds: &Ds| unsafe { CStr::from_ptr(lance_dataset_uri(ds.ptr())) }.to_str().unwrap().to_string();
        let (ua, ub) = (uri_of(&a), uri_of(&b));
        let sa = vec![
            crate::write::stage(&ua, a.ptr(), vec![crate::write::rows(10..15)], &append).unwrap(),
            crate::write::stage(&ua, a.ptr(), vec![crate::write::rows(15..20)], &append).unwrap(),
        ];
        let sb = vec![crate::write::stage(&ub, b.ptr(), vec![crate::write::rows(100..130)], &append).unwrap()];
        let before = server.observed_paths().len();
        let got = commit_tables(&[(&ua, &sa), (&ub, &sb)]);
        let paths: Vec<String> = server.observed_paths()[before..].to_vec();
        if batch {
            assert_eq!(got.unwrap(), vec![2, 2]);
            assert_eq!(paths.iter().filter(|p| p.ends_with("/table/batch-commit")).count(), 1, "{paths:?}");
            assert!(!paths.iter().any(|p| p.ends_with("/version/create")), "{paths:?}");
            assert_eq!((rows(&open_table(&cat, &[], "a", 0).unwrap()), rows(&open_table(&cat, &[], "b", 0).unwrap())), (20, 40));
            // the same shares again: refused (their files are in a version now), nothing committed
            expect_err(commit_tables(&[(&ua, &sa), (&ub, &sb)]), LANCE_ERR_INVALID_ARGUMENT, "table 0");
        } else {
            expect_err(got, LANCE_ERR_NOT_SUPPORTED, "cannot commit several tables together");
            assert_eq!((rows(&open_table(&cat, &[], "a", 0).unwrap()), rows(&open_table(&cat, &[], "b", 0).unwrap())), (10, 10));
        }
        let latest = open_table(&cat, &[], "a", 0).unwrap();
        assert_eq!(lance_dataset_version(latest.ptr()), if batch { 2 } else { 1 });
    }
    // arguments: NULL arrays with tables, no tables
    let code = lance_commit_tables(
        2,
        std::ptr::null(),
        std::ptr::null(),
        std::ptr::null(),
        std::ptr::null(),
        std::ptr::null(),
        std::ptr::null_mut(),
        std::ptr::null(),
    );
    assert_eq!(code, LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(last_message().contains("uris is NULL"), "{}", last_message());
    expect_err(commit_tables(&[]), LANCE_ERR_INVALID_ARGUMENT, "at least one table");
}
