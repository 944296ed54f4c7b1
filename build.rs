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
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_default();
    let soname = format!("liblance_host.so.{major}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/lance_host.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
}
