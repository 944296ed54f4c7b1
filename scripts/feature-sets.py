#!/usr/bin/env python3
"""Check that every cargo invocation of the README's two commands resolves the same features for
every dependency they share, so that the Lance stack is compiled once between them:
  - the library build through CMake (`cargo build -p lance-host --lib`),
  - the demo's testkit build with the ADBC driver (`cargo build -p lance-host-testkit -p
    lance-host-adbc`, scripts/build-lib.sh),
  - the tests (`cargo test --workspace`, dev-dependencies included).
Exits 1 and names the crates whose features differ."""
import subprocess
import sys


def features(args):
    out = subprocess.run(
        ["cargo", "tree", "--offline", "--prefix", "none", "-f", "{p}|{f}", *args],
        check=True, capture_output=True, text=True).stdout
    sets = {}
    for line in out.splitlines():
        line = line.replace(" (*)", "").strip()
        if "|" not in line:
            continue
        crate, feats = line.split("|", 1)
        if " (proc-macro)" in crate:
            continue
        sets.setdefault(crate.split(" (")[0], set()).add(feats)
    return sets


invocations = {
    "library (cargo build -p lance-host --lib)": ["-p", "lance-host", "-e", "normal,build"],
    "demo testkit and ADBC driver (cargo build -p lance-host-testkit -p lance-host-adbc)":
        ["-p", "lance-host-testkit", "-p", "lance-host-adbc", "-e", "normal,build"],
    "tests (cargo test --workspace)": ["--workspace", "-e", "normal,build,dev"],
}
resolved = {name: features(args) for name, args in invocations.items()}
names = list(resolved)
bad = 0
for i, a in enumerate(names):
    for b in names[i + 1:]:
        for crate in sorted(resolved[a].keys() & resolved[b].keys()):
            x, y = resolved[a][crate], resolved[b][crate]
            # A crate can be built more than once (for build scripts and proc-macros, or for a
            # dev-only tool such as cbindgen): one build needing a feature set the other lacks
            # is fine as long as every set of one build is also a set of the other.
            if not (x <= y or y <= x):
                bad += 1
                print(f"{crate}: {a}: {sorted(resolved[a][crate])}; {b}: {sorted(resolved[b][crate])}")
if bad:
    sys.exit(f"{bad} feature differences: these builds would compile shared crates twice")
print(f"feature sets aligned across {len(names)} builds "
      f"({len(resolved[names[-1]])} crates in the largest)")
