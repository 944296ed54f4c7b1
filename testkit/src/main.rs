//! `lance-host-testkit warehouse <dir>`: write the test/demo warehouse and its FIXTURE file.

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (cmd, dir) = match args.as_slice() {
        [_, cmd, dir] => (cmd.as_str(), PathBuf::from(dir)),
        _ => {
            eprintln!("usage: lance-host-testkit warehouse <dir>");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let result = match cmd {
        "warehouse" => rt.block_on(lance_host_testkit::write_warehouse(&dir)),
        other => {
            eprintln!("unknown command '{other}'");
            std::process::exit(2);
        }
    };
    match result {
        Ok(facts) => print!("{}", facts.to_text()),
        Err(e) => {
            eprintln!("lance-host-testkit: {e}");
            std::process::exit(1);
        }
    }
}
