//! Linux shared-library surface: export only the C ABI (`lance_host.map`) and give the library
//! the SONAME `liblance_host.so.<major>`, so hosts link against a compatibility line, not a
//! file name: every release of one major version keeps the ABI of the earlier ones (see "ABI
//! compatibility" in the README).

fn main() {
    println!("cargo:rerun-if-changed=lance_host.map");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    // The linker reads the map from OUT_DIR (inside the target directory), not from the
    // checkout: a target directory shared by checkouts at different paths (CI's clone and a
    // session's) may reuse this script's output without running it again.
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let map = format!("{out}/lance_host.map");
    std::fs::copy(format!("{dir}/lance_host.map"), &map).expect("copy lance_host.map to OUT_DIR");
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_default();
    let soname = format!("liblance_host.so.{major}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={map}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
}
