//! Short runs of the stress tool (the long soak is `bench/soak.sh`): 8 threads of mixed
//! operations, then readers on pinned handles beside a writer that appends, deletes, updates,
//! compacts, optimizes indexes and cleans up old versions. Every result must be right and every
//! error one the scenario allows.

use std::process::Command;

fn run(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_lance-host-stress")).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let report: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|_| {
        panic!("no report (status {}): {stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr))
    });
    assert!(out.status.success(), "stress run failed: {report:#}");
    report
}

#[test]
fn eight_threads_of_mixed_operations_are_all_right() {
    let r = run(&["--threads", "8", "--seconds", "8"]);
    assert_eq!(r["wrong"], 0, "{r:#}");
    assert_eq!(r["unexpected_errors"], 0, "{r:#}");
    let kinds = r["ops_by_kind"].as_object().unwrap();
    for k in ["open", "catalog", "filtered scan", "split scan", "flat search", "index search", "take", "prewarm", "count", "session stats"] {
        assert!(kinds.get(k).and_then(|v| v.as_u64()).unwrap_or(0) > 0, "no '{k}' operation ran: {r:#}");
    }
    println!("{r}");
}

#[test]
fn pinned_readers_beside_a_writer_see_exactly_their_version() {
    let r = run(&["--threads", "6", "--seconds", "12", "--writer"]);
    assert_eq!(r["wrong"], 0, "{r:#}");
    assert_eq!(r["unexpected_errors"], 0, "{r:#}");
    let w = &r["writer"];
    assert!(w["failures"].as_array().unwrap().is_empty(), "{r:#}");
    for k in ["append", "delete", "update", "compact", "optimize", "cleanup"] {
        assert!(w["by_kind"][k].as_u64().unwrap_or(0) > 0, "the writer never ran '{k}': {r:#}");
    }
    assert!(r["ops_by_kind"]["pinned scan"].as_u64().unwrap() > 0, "{r:#}");
    println!("{r}");
}
