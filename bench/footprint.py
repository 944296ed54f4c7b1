"""The release library's footprint (issue 60): its stripped size, its sections, the code each
group of crates brings (object stores, tokenizers, TLS, DataFusion, Lance, ...), and the time a
process takes to load it. Writes bench/FOOTPRINT.md and bench/FOOTPRINT.json.

    python3 bench/footprint.py --lib <release liblance_host.so> [--runs 9]

Per-crate sizes come from the library's own symbol table (`nm --size-sort`, demangled): each
function or datum is counted for the crate that defines it (for a generic instantiated by another
crate, the crate of the generic's path). That splits one build; it is not a build without the
feature, whose size would also lose the callers' glue. Load time: a fresh process `dlopen`s the
library (RTLD_NOW, as a host links it) and calls `lance_host_version`; median of alternating runs
of the stripped and the unstripped file, page cache warm.
"""

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent

# crate-name prefixes -> the feature or layer they belong to (first match wins)
GROUPS = [
    ("object stores: Google Cloud Storage", [r"object_store::gcp", r"google_cloud"]),
    ("object stores: Azure", [r"object_store::azure", r"azure_"]),
    ("object stores: S3 (object_store)", [r"object_store::aws"]),
    ("object stores: OSS, COS, TOS, HF (opendal)", [r"opendal"]),
    ("object stores: AWS SDK (DynamoDB commits, credentials)", [r"aws_sdk_", r"aws_smithy_", r"aws_config", r"aws_types",
                                                                 r"aws_credential", r"aws_sigv4", r"aws_runtime"]),
    ("object stores: common (object_store)", [r"object_store"]),
    ("tokenizers: jieba (Chinese)", [r"jieba"]),
    ("tokenizers: lindera (Japanese)", [r"lindera"]),
    ("full-text: tantivy", [r"tantivy"]),
    ("TLS and crypto", [r"rustls", r"ring::", r"aws_lc", r"openssl", r"webpki", r"sha2", r"hmac", r"md5"]),
    ("HTTP", [r"hyper", r"reqwest", r"h2::", r"http::", r"tower"]),
    ("DataFusion", [r"datafusion"]),
    ("Lance", [r"lance"]),
    ("Arrow and Parquet", [r"arrow", r"parquet"]),
    ("Substrait and protobuf", [r"substrait", r"prost", r"pbjson"]),
    ("async runtime", [r"tokio", r"futures"]),
    ("compression", [r"zstd", r"lz4", r"snap", r"flate2", r"miniz", r"brotli", r"bzip2", r"xz"]),
    ("Rust standard library", [r"std::", r"core::", r"alloc::", r"hashbrown"]),
]


def crate_of(symbol):
    """The crate path a demangled symbol starts with (impl blocks: the implementing type's; a
    generic of the standard library, e.g. `core::ptr::drop_in_place<T>`: its type argument's)."""
    s = symbol
    for _ in range(4):
        s = re.sub(r"^(<|&|\*|\(|dyn |mut |const |impl )+", "", s)
        if re.match(r"^(core|alloc|std)::", s) and "<" in s:
            s = s[s.index("<") + 1:]
            continue
        break
    return s


def group_of(symbol):
    path = crate_of(symbol)
    for name, prefixes in GROUPS:
        if any(path.startswith(p) or path.startswith(p.replace("::", "")) for p in prefixes):
            return name
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*::", path):
        return "other Rust crates"
    return "C/C++ and unnamed"


def load_time(path):
    code = ("import ctypes, os, time; t = time.perf_counter(); "
            f"lib = ctypes.CDLL({str(path)!r}, mode=os.RTLD_NOW); lib.lance_host_version(); "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return float(out.stdout.strip())


SPEED_WORK = ["TPC-H Q1, one call", "scan of the 4 decimal columns", "vector search, IVF_PQ, 50 queries",
              "full-text search, 50 queries"]


def search_tables(directory):
    """A 200,000-row table of 128-d vectors with an IVF_PQ index and one of 200,000 documents with
    an INVERTED index, written by pylance into `directory` once."""
    import lance
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(60)
    vectors, docs = directory / "vectors.lance", directory / "docs.lance"
    if not vectors.exists():
        v = rng.standard_normal((200_000, 128), dtype=np.float32)
        t = pa.table({"id": pa.array(np.arange(200_000)),
                      "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), 128)})
        lance.write_dataset(t, str(vectors)).create_index("vec", "IVF_PQ", num_partitions=64, num_sub_vectors=16)
    if not docs.exists():
        words = np.array([f"w{i}" for i in range(2000)])
        text = [" ".join(words[rng.zipf(1.3, 8) % 2000]) for _ in range(200_000)]
        t = pa.table({"id": pa.array(np.arange(200_000)), "doc": pa.array(text)})
        lance.write_dataset(t, str(docs)).create_scalar_index("doc", "INVERTED")
    return vectors, docs


def speed_child(work, uri):
    """One timed execution of `work` on `uri` after a warm-up, with the library $LANCE_HOST_LIB."""
    import time
    sys.path.insert(0, str(ROOT))
    from tpch import SCANS, query_runner
    if work == SPEED_WORK[0]:
        run = query_runner("lance-host (one call)", "Q1", uri, None, None)
    elif work in SPEED_WORK[2:]:
        import lance_host as lh
        import numpy as np
        vectors, docs = search_tables(Path(uri).parent)
        if work == SPEED_WORK[2]:
            ds = lh.open(str(vectors))
            queries = np.random.default_rng(7).standard_normal((50, 128), dtype=np.float32)

            def run():
                return [ds.vector_search("vec", q, 10, columns=["id"])["id"].to_pylist() for q in queries]
        else:
            ds = lh.open(str(docs))
            texts = [f"w{i} w{i + 7}" for i in range(1, 51)]

            def run():
                return [ds.full_text_search("doc", t, 10, columns=["id"])["id"].to_pylist() for t in texts]
    else:
        import lance_host as lh
        ds = lh.open(uri)

        def run():
            return sum(b.nbytes for b in ds.scan(columns=SCANS["4 decimal columns"]))
    run()
    start = time.perf_counter()
    out = run()
    answer = sorted(map(str, out)) if isinstance(out, list) else out  # groups come in any order
    print(json.dumps({"seconds": time.perf_counter() - start, "answer": str(answer)}))


def speed(builds, table, runs):
    """Per work and build: the seconds of `runs` fresh processes, builds alternating."""
    search_tables(Path(table))  # written once, before any timed run
    out = {w: {label: [] for label in builds} for w in SPEED_WORK}
    order = list(builds)
    for w in SPEED_WORK:
        answers = set()
        for i in range(runs):
            for label in order[i % len(order):] + order[:i % len(order)]:
                env = dict(os.environ, LANCE_HOST_LIB=str(builds[label]["path"]),
                           PYTHONPATH=str(ROOT.parent / "python"))
                r = subprocess.run([sys.executable, __file__, "--speed-child", w, str(Path(table) / "lineitem.lance")],
                                   env=env, capture_output=True, text=True, timeout=1800)
                if r.returncode != 0:
                    raise SystemExit(r.stderr[-3000:])
                got = json.loads(r.stdout.strip().splitlines()[-1])
                answers.add(got["answer"])
                out[w][label].append(got["seconds"])
        assert len(answers) == 1, f"{w}: the builds answered differently"
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.environ.get("LANCE_HOST_LIB"))
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=LIB",
                    help="another build of the library to compare (its stripped size, .text and load time)")
    ap.add_argument("--label", default="release", help="what the --lib build is, in the comparison table")
    ap.add_argument("--speed-table", help="with --also: a directory holding bench/tpch.py's lineitem.lance; each build "
                    "runs TPC-H Q1 (one call) and a scan of its four decimal columns there, in fresh processes")
    ap.add_argument("--out", default="FOOTPRINT", help="the report's name in bench/ (NAME.md and NAME.json)")
    ap.add_argument("--speed-child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.speed_child:
        return speed_child(*args.speed_child)
    lib = Path(args.lib)
    work = Path(tempfile.mkdtemp(prefix="lh-footprint-"))
    stripped = work / "liblance_host.so"
    shutil.copy(lib, stripped)
    subprocess.run(["strip", "--strip-all", str(stripped)], check=True)
    sections = {}
    for line in subprocess.run(["size", "-A", str(stripped)], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            sections[parts[0]] = int(parts[1])
    sizes = collections.Counter()
    counts = collections.Counter()
    other = collections.Counter()
    nm = subprocess.run(["nm", "-C", "--size-sort", "--defined-only", str(lib)], capture_output=True, text=True,
                        check=True).stdout
    for line in nm.splitlines():
        parts = line.split(" ", 2)
        if len(parts) < 3:
            continue
        size, kind, name = int(parts[0], 16), parts[1], parts[2]
        if kind.lower() not in ("t", "r", "d", "b", "w", "v"):
            continue
        g = group_of(name)
        if g == "other Rust crates":
            other[crate_of(name).split("::")[0]] += size
        sizes[g] += size
        counts[g] += 1
    times = {"stripped": [], "unstripped": []}
    load_time(lib)
    load_time(stripped)
    for i in range(args.runs):
        for name, path in ((("stripped", stripped), ("unstripped", lib)) if i % 2 == 0 else
                           (("unstripped", lib), ("stripped", stripped))):
            times[name].append(load_time(path))
    stripped_bytes = stripped.stat().st_size
    # other builds: stripped size, .text and load time, runs alternating with this build's
    builds = {args.label: {"path": stripped, "bytes": stripped_bytes, "text": sections.get(".text", 0), "load": []}}
    for spec in args.also:
        label, path = spec.split("=", 1)
        copy = work / f"also-{len(builds)}.so"
        shutil.copy(path, copy)
        subprocess.run(["strip", "--strip-all", str(copy)], check=True)
        text = 0
        for line in subprocess.run(["size", "-A", str(copy)], capture_output=True, text=True, check=True).stdout.splitlines():
            if line.startswith(".text "):
                text = int(line.split()[1])
        load_time(copy)
        builds[label] = {"path": copy, "bytes": copy.stat().st_size, "text": text, "load": []}
    if len(builds) > 1:
        order = list(builds)
        for i in range(args.runs):
            for label in order[i % len(order):] + order[:i % len(order)]:
                builds[label]["load"].append(load_time(builds[label]["path"]))
    speeds = speed(builds, args.speed_table, args.runs) if args.speed_table and len(builds) > 1 else {}
    result = {"file_bytes": lib.stat().st_size, "stripped_bytes": stripped_bytes, "sections": sections,
              "groups": dict(sizes), "symbols": dict(counts), "other_crates": dict(other.most_common(40)), "load_seconds": times,
              "builds": {k: {"stripped_bytes": v["bytes"], "text_bytes": v["text"], "load_seconds": v["load"]}
                         for k, v in builds.items()}, "speed_seconds": speeds}
    (ROOT / f"{args.out}.json").write_text(json.dumps(result, indent=1))
    shutil.rmtree(work)
    mb = lambda b: b / 1e6  # noqa: E731
    attributed = sum(sizes.values())
    lines = [
        "# Footprint of the release library",
        "",
        f"`python3 bench/footprint.py --runs {args.runs}" + (f" --out {args.out}" if args.out != "FOOTPRINT" else "")
        + f"` on the {args.label} build of this checkout "
        "(CMake's release build: cargo's release profile, mimalloc, the default features — every object store and "
        f"tokenizer the library ships). File: **{mb(lib.stat().st_size):.0f} MB**; stripped of symbols and debug info "
        f"(`strip --strip-all`): **{mb(stripped_bytes):.0f} MB** (issue 60's goal: at most 150 MB).",
        "",
        "| section of the stripped file | MB |",
        "| --- | ---: |",
    ]
    for name, size in sorted(sections.items(), key=lambda kv: -kv[1])[:6]:
        lines.append(f"| `{name}` | {mb(size):.1f} |")
    lines += [
        "",
        f"Code and data by what brings it (the symbol table: {mb(attributed):.0f} MB attributed to {sum(counts.values()):,} "
        "symbols; the rest of the file is unwinding tables, relocations and unnamed data):",
        "",
        "| group | MB | symbols |",
        "| --- | ---: | ---: |",
    ]
    for name, size in sizes.most_common():
        lines.append(f"| {name} | {mb(size):.1f} | {counts[name]:,} |")
    lines += ["", "The largest of the other Rust crates: " + ", ".join(
        f"`{c}` {mb(b):.1f} MB" for c, b in other.most_common(12)) + "."]
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    lines += [
        "",
        f"Load time (a fresh process: `dlopen` with RTLD_NOW and the first call), median (min–max) of {args.runs} "
        f"alternating runs: stripped **{med['stripped']:.1f} ms** ({min(times['stripped']) * 1000:.1f}–"
        f"{max(times['stripped']) * 1000:.1f}), unstripped {med['unstripped']:.1f} ms "
        f"({min(times['unstripped']) * 1000:.1f}–{max(times['unstripped']) * 1000:.1f}) (goal: at most 20 ms).",
        "",
        "What the symbol table does not show: the glue a feature brings into its callers (counted under the caller's "
        "crate; " + ("the builds compared below were built without features, which includes it"
                     if args.also else "a build without the feature would show it") + "), and the cold-cache load "
        "time (the page cache holds the file in every run).",
    ]
    if len(builds) > 1:
        first = builds[args.label]
        lines += ["", f"Builds compared (stripped; load time as above, median (min–max) of {args.runs} runs, builds "
                  "alternating):", "", f"| build | stripped MB | MB less than {args.label} | `.text` MB | load time, ms |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for label, b in builds.items():
            ms = [x * 1000 for x in b["load"]]
            lines.append(f"| {label} | {mb(b['bytes']):.0f} | {mb(first['bytes'] - b['bytes']):.1f} | {mb(b['text']):.0f} | "
                         f"{statistics.median(ms):.1f} ({min(ms):.1f}–{max(ms):.1f}) |")
    if speeds:
        first = list(builds)[0]
        lines += ["", f"Speed of each build on bench/tpch.py's lineitem table in `{args.speed_table}` and on a vector table "
                  "and a document table written there (`search_tables`), a fresh process per run after a warm-up, "
                  f"builds alternating, {args.runs} runs; answers equal):", "",
                  "| work | build | seconds: median (min–max) | × " + first + " |", "| --- | --- | --- | ---: |"]
        for w, per in speeds.items():
            for label, secs in per.items():
                ratio = statistics.median([a / b for a, b in zip(secs, per[first])])
                lines.append(f"| {w} | {label} | {statistics.median(secs):.3f} ({min(secs):.3f}–{max(secs):.3f}) | "
                             f"{ratio:.2f} |")
    text = "\n".join(lines)
    (ROOT / f"{args.out}.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
