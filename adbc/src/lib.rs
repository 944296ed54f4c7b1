//! lance-host's ADBC driver (ADBC 1.1): `liblance_host_adbc.so`, loaded by ADBC driver managers
//! through `AdbcDriverInit` (or `AdbcLanceHostInit`). It is glue over `lance_host.h`: it loads
//! `liblance_host.so` (see `api.rs`) and maps ADBC's database, connection and statement onto a
//! catalog, the process-wide session and scans, splits and writes. `docs/adbc.md` has the user's
//! view: options, the SQL subset, partitions, ingest and transactions.

mod api;
mod driver;
mod handles;
mod objects;
mod partition;
mod plan;
mod search;
mod shared;
mod sql;
mod statement;
mod text;
mod writes;

pub use driver::LanceHostDriver;

adbc_ffi::export_driver!(AdbcLanceHostInit, driver::LanceHostDriver);
