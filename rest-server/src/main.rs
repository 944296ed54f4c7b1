//! `lance-host-rest-server <warehouse-root> [--bearer-token T] [--api-key K] [--batch-commits]
//! [--storage KEY=VALUE]... [--vend-url URL]`: serve a directory warehouse as a Lance REST
//! namespace on 127.0.0.1; prints `LISTENING <port>` and runs until standard input closes.
//! `--batch-commits`: the namespace manages its tables' versions and commits versions of
//! several tables together. `--storage`: a storage option the server itself reads the
//! warehouse with (an object-store root). `--vend-url`: describe answers vend the storage
//! options that URL issues (`AuthConfig::vend_url`). `--lose-answer-marker PATH` (a test fault,
//! with `--batch-commits`): while the file PATH exists, the next version committed through the
//! namespace removes it and is answered with an error although it landed.

use lance_host_rest_server::{start_with, AuthConfig, LOSE_ANSWER_MARKER};
use tokio::io::AsyncReadExt;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(root) = args.first().cloned() else {
        eprintln!("usage: lance-host-rest-server <warehouse-root> [--bearer-token T] [--api-key K] [--batch-commits] [--storage KEY=VALUE]... [--vend-url URL] [--lose-answer-marker PATH]");
        std::process::exit(2);
    };
    let mut auth = AuthConfig::default();
    let mut batch_commits = false;
    let mut backend = std::collections::HashMap::new();
    let mut it = args.iter().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--batch-commits" {
            batch_commits = true;
            continue;
        }
        let value = it.next().cloned();
        match (flag.as_str(), value) {
            ("--bearer-token", Some(v)) => auth.bearer_token = Some(v),
            ("--api-key", Some(v)) => auth.api_key = Some(v),
            ("--vend-url", Some(v)) => auth.vend_url = Some(v),
            ("--lose-answer-marker", Some(v)) => {
                backend.insert(LOSE_ANSWER_MARKER.to_string(), v);
            }
            ("--storage", Some(v)) if v.contains('=') => {
                let (k, val) = v.split_once('=').expect("checked");
                backend.insert(format!("storage.{k}"), val.to_string());
            }
            _ => {
                eprintln!("unknown or incomplete argument: {flag}");
                std::process::exit(2);
            }
        }
    }
    let server = match start_with(&root, auth, backend, batch_commits).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("lance-host-rest-server: {e}");
            std::process::exit(1);
        }
    };
    println!("LISTENING {}", server.port);
    let mut buf = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut buf).await;
    // Exit without the adapter's blocking shutdown (it must not run inside the runtime).
    let _ = server.port;
    std::process::exit(0);
}
