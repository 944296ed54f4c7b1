//! `lance-host-testkit warehouse <dir>`: write the test/demo warehouse and its FIXTURE file.
//! `lance-host-testkit lindera-dict <source dir> <output dir>`: compile a MeCab-format dictionary
//! (char.def, unk.def, matrix.def, *.csv with IPADIC's 13 columns) into a Lindera dictionary
//! that Lance's `lindera/<model>` tokenizer loads (the full-text tests write the source).

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, cmd, source, output] = args.as_slice() {
        if cmd == "lindera-dict" {
            let builder = lindera_dictionary::builder::DictionaryBuilder::new(Default::default());
            if let Err(e) = builder.build_dictionary(std::path::Path::new(source), std::path::Path::new(output)) {
                eprintln!("lance-host-testkit lindera-dict: {e}");
                std::process::exit(1);
            }
            return;
        }
    }
    let (cmd, dir) = match args.as_slice() {
        [_, cmd, dir] => (cmd.as_str(), PathBuf::from(dir)),
        _ => {
            eprintln!("usage: lance-host-testkit warehouse <dir> | lindera-dict <source dir> <output dir>");
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
