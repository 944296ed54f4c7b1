//! A Lance REST namespace server for tests: Lance's own REST adapter serving a directory
//! warehouse, behind a small proxy that enforces authentication (bearer token or API key),
//! records the headers it sees, can cap page sizes, and can vend storage credentials from an
//! issuer (`AuthConfig::vend_url`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Router;
use lance_namespace_impls::{ConnectBuilder, RestAdapter, RestAdapterConfig};

pub mod batch;

/// Numeric codes of the Lance namespace error model used in error bodies.
const CODE_PERMISSION_DENIED: u32 = 15;
const CODE_UNAUTHENTICATED: u32 = 16;

/// What the proxy accepts.
#[derive(Debug, Clone, Default)]
pub struct AuthConfig {
    /// Accept `Authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
    /// Accept `x-api-key: <key>`.
    pub api_key: Option<String>,
    /// Tokens that authenticate but are not allowed to read (answered with 403).
    pub forbidden_token: Option<String>,
    /// Vend storage credentials: every successful `DescribeTable` answer gets the storage
    /// options a GET of this URL returns (a JSON object of strings, e.g. short-lived keys with
    /// `expires_at_millis`) merged into its `storage_options`. A non-2xx answer of the URL
    /// (the issuer revoked the caller) is passed on as the namespace's PERMISSION_DENIED.
    pub vend_url: Option<String>,
}

/// A running server; dropped = stopped.
pub struct ServerHandle {
    pub port: u16,
    observed: Arc<Mutex<Vec<HashMap<String, String>>>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    adapter: lance_namespace_impls::RestAdapterHandle,
}

impl ServerHandle {
    pub fn uri(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Headers of every request received so far (lower-case names).
    pub fn observed_headers(&self) -> Vec<HashMap<String, String>> {
        self.observed.lock().unwrap().clone()
    }

    /// Paths of every request received so far.
    pub fn observed_paths(&self) -> Vec<String> {
        self.observed_headers()
            .into_iter()
            .filter_map(|h| h.get(":path").cloned())
            .collect()
    }

    pub fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.adapter.shutdown();
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

#[derive(Clone)]
struct ProxyState {
    backend: String,
    auth: AuthConfig,
    client: reqwest::Client,
    observed: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

fn error_response(status: StatusCode, code: u32, message: &str) -> Response {
    let body = serde_json::json!({ "error": message, "code": code, "type": "auth" });
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn check_auth(auth: &AuthConfig, headers: &HeaderMap) -> Result<(), Response> {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    if let (Some(forbidden), Some(given)) = (&auth.forbidden_token, bearer) {
        if forbidden == given {
            return Err(error_response(
                StatusCode::FORBIDDEN,
                CODE_PERMISSION_DENIED,
                "this principal may not read the warehouse",
            ));
        }
    }
    let required = auth.bearer_token.is_some() || auth.api_key.is_some();
    if !required {
        return Ok(());
    }
    let bearer_ok = matches!((&auth.bearer_token, bearer), (Some(t), Some(g)) if t == g);
    let key_ok = matches!((&auth.api_key, api_key), (Some(k), Some(g)) if k == g);
    if bearer_ok || key_ok {
        Ok(())
    } else {
        Err(error_response(
            StatusCode::UNAUTHORIZED,
            CODE_UNAUTHENTICATED,
            "missing or invalid credentials",
        ))
    }
}

async fn proxy(State(state): State<ProxyState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let mut seen: HashMap<String, String> = parts
        .headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    seen.insert(":path".into(), parts.uri.path().to_string());
    state.observed.lock().unwrap().push(seen);
    if let Err(resp) = check_auth(&state.auth, &parts.headers) {
        return resp;
    }
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let url = format!("{}{}", state.backend, path_and_query);
    let bytes = match axum::body::to_bytes(body, 64 << 20).await {
        Ok(b) => b,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, 13, &e.to_string()),
    };
    let mut out = state.client.request(parts.method.clone(), url).body(bytes);
    if let Some(ct) = parts.headers.get("content-type") {
        out = out.header("content-type", ct.as_bytes());
    }
    let describe = parts.method == axum::http::Method::POST && parts.uri.path().ends_with("/describe")
        && parts.uri.path().starts_with("/v1/table/") && !parts.uri.path().contains("/version/");
    match out.send().await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let ct = resp.headers().get("content-type").cloned();
            let mut body = resp.bytes().await.unwrap_or_default();
            if let (true, true, Some(url)) = (describe, status == 200, &state.auth.vend_url) {
                match vend(&state.client, url, &body).await {
                    Ok(b) => body = b,
                    Err(resp) => return resp,
                }
            }
            let mut builder = Response::builder().status(status);
            if let Some(ct) = ct {
                builder = builder.header("content-type", ct.as_bytes());
            }
            builder.body(Body::from(body)).unwrap()
        }
        Err(e) => error_response(StatusCode::BAD_GATEWAY, 17, &e.to_string()),
    }
}

/// `body` (a DescribeTable answer) with the options the issuer at `url` hands out now merged
/// into its `storage_options`.
async fn vend(client: &reqwest::Client, url: &str, body: &[u8]) -> Result<axum::body::Bytes, Response> {
    let issued = client
        .get(url)
        .send()
        .await
        .map_err(|e| error_response(StatusCode::BAD_GATEWAY, 17, &format!("credential issuer: {e}")))?;
    if !issued.status().is_success() {
        return Err(error_response(
            StatusCode::FORBIDDEN,
            CODE_PERMISSION_DENIED,
            "the credential issuer refused to vend storage credentials for this table",
        ));
    }
    let vended: serde_json::Map<String, serde_json::Value> = issued
        .json()
        .await
        .map_err(|e| error_response(StatusCode::BAD_GATEWAY, 17, &format!("credential issuer answer: {e}")))?;
    let mut answer: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| error_response(StatusCode::BAD_GATEWAY, 17, &format!("describe answer: {e}")))?;
    let obj = answer
        .as_object_mut()
        .ok_or_else(|| error_response(StatusCode::BAD_GATEWAY, 17, "describe answer is not an object"))?;
    let options = obj
        .entry("storage_options")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if !options.is_object() {
        *options = serde_json::Value::Object(Default::default());
    }
    let options = options.as_object_mut().expect("an object");
    for (k, v) in vended {
        options.insert(k, v);
    }
    Ok(axum::body::Bytes::from(answer.to_string()))
}

/// Start the server for the directory warehouse at `root` on 127.0.0.1 (ephemeral ports).
/// Must be called inside a tokio runtime that keeps running while the server is used.
pub async fn start(root: &str, auth: AuthConfig) -> Result<ServerHandle, String> {
    start_with_backend(root, auth, HashMap::new()).await
}

/// `start` with extra properties for the directory namespace behind the adapter (for example
/// `storage.<key>` with `vend_input_storage_options=true`, so describe_table vends options).
pub async fn start_with_backend(
    root: &str,
    auth: AuthConfig,
    backend_properties: HashMap<String, String>,
) -> Result<ServerHandle, String> {
    start_with(root, auth, backend_properties, false).await
}

/// The property of `start_with` that names the lost-answer test fault's marker file: while the
/// file exists, the next version committed through the namespace removes it and is answered
/// with an error although it landed (a lost answer, for testing clients' retries).
pub const LOSE_ANSWER_MARKER: &str = "lance_host.test.lose_answer_marker";

/// `start_with_backend`; with `batch_commits`, the namespace also commits versions of several
/// tables together (`batch_commit_tables`, `batch_create_table_versions`; see `batch`) and
/// manages its tables' versions (version tracking is switched on).
pub async fn start_with(
    root: &str,
    auth: AuthConfig,
    mut backend_properties: HashMap<String, String>,
    batch_commits: bool,
) -> Result<ServerHandle, String> {
    // the test fault travels as a property of its own; the directory namespace never sees it
    let lose_marker = backend_properties.remove(LOSE_ANSWER_MARKER).map(std::path::PathBuf::from);
    if lose_marker.is_some() && !batch_commits {
        return Err("the lost-answer test fault needs batch commits (the namespace commits versions)".into());
    }
    if batch_commits {
        backend_properties.insert("table_version_tracking_enabled".into(), "true".into());
    }
    let mut backend = ConnectBuilder::new("dir")
        .property("root", root)
        .properties(backend_properties)
        .connect()
        .await
        .map_err(|e| format!("cannot open warehouse {root}: {e}"))?;
    if batch_commits {
        backend = Arc::new(batch::BatchCommitNamespace::open(backend, root, lose_marker).await?);
    }
    let adapter = RestAdapter::new(
        backend,
        RestAdapterConfig {
            host: "127.0.0.1".to_string(),
            port: 0,
        },
    )
    .start()
    .await
    .map_err(|e| format!("cannot start REST adapter: {e}"))?;
    let observed = Arc::new(Mutex::new(Vec::new()));
    let state = ProxyState {
        backend: format!("http://127.0.0.1:{}", adapter.port()),
        auth,
        client: reqwest::Client::new(),
        observed: observed.clone(),
    };
    let app = Router::new().fallback(proxy).with_state(state);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .map_err(|e| format!("cannot bind: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
    });
    Ok(ServerHandle {
        port,
        observed,
        shutdown: Some(tx),
        adapter,
    })
}
