//! The committed header must equal a fresh cbindgen generation.

use std::path::PathBuf;

/// Generate the header text from the sources and `cbindgen.toml`.
fn generate() -> String {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    let mut parts = version.split('.');
    let after = config.after_includes.take().unwrap_or_default();
    config.after_includes = Some(
        after
            .replace("@VERSION@", version)
            .replace("@MAJOR@", parts.next().unwrap())
            .replace("@MINOR@", parts.next().unwrap())
            .replace("@PATCH@", parts.next().unwrap()),
    );
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generation");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn header_is_up_to_date() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/lance_host.h");
    let fresh = generate();
    if std::env::var_os("LANCE_HOST_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/lance_host.h is stale: regenerate it with \
         `LANCE_HOST_BLESS=1 cargo test --test integration header`"
    );
}

#[test]
fn header_version_matches_crate() {
    let fresh = generate();
    let expected = format!("#define LANCE_HOST_VERSION \"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(fresh.contains(&expected));
    // Every exported function is documented, including its thread-safety.
    let mut comment = String::new();
    for line in fresh.lines() {
        let t = line.trim_start();
        if t.starts_with("//") {
            comment.push_str(t);
            comment.push('\n');
            continue;
        }
        if t.contains(" lance_") && t.contains('(') && t.ends_with(");") || t.starts_with("lance_") {
            assert!(!comment.is_empty(), "undocumented: {t}");
            assert!(
                comment.to_lowercase().contains("thread-safe") || comment.contains("concurrently"),
                "no thread-safety note for: {t}"
            );
        }
        comment.clear();
    }
}
