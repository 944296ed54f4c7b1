"""The installed shared library runs only known constructors when a host loads it.

    python3 check_constructors.py <liblance_host.so>

Every entry of the library's .init_array (the functions the dynamic loader calls on dlopen, in
every host process: a JVM, Python, DuckDB) is resolved to its symbol and must match one of ALLOWED,
each cheap. A dependency that brings a new constructor fails this test until it is looked at: the
TSC calibration of the `fastant` crate spun on the clock for 20 ms per process load (shims/README.md).
Needs the library's symbol table (the build tree's library, or an unstripped install).
"""

import re
import struct
import subprocess
import sys

# (pattern over the demangled symbol, why it is there)
ALLOWED = [
    (r"^frame_dummy$", "the C runtime's frame registration"),
    (r"^std::sys::args::unix::imp::ARGV_INIT_ARRAY::init_wrapper$", "Rust's std keeps argc/argv"),
    (r"^opendal::register_default_operator_registry::", "opendal registers its storage schemes (a map insert)"),
    (r"^lance_host::mimalloc_options::configure$", "the release allocator's options (release builds)"),
    (r"^mi_process_attach$", "mimalloc's process start (release builds)"),
    (r"^do_library_init$", "aws-lc's CPU feature detection"),
]


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def constructors(lib):
    sections = run("readelf", "-S", "-W", lib)
    m = re.search(r"\]\s+\.init_array\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
    if not m:
        return []
    addr, offset, size = (int(x, 16) for x in m.groups())
    with open(lib, "rb") as f:
        f.seek(offset)
        raw = f.read(size)
    targets = {addr + i: struct.unpack_from("<Q", raw, i)[0] for i in range(0, size, 8)}
    # a shared library's pointers are relocated: the relative relocations' addends are the targets
    for line in run("readelf", "-r", "-W", lib).splitlines():
        parts = line.split()
        if len(parts) >= 4 and "RELATIVE" in line and re.fullmatch(r"[0-9a-f]+", parts[0]):
            where = int(parts[0], 16)
            if where in targets:
                targets[where] = int(parts[-1], 16)
    names = {}
    for line in run("nm", "-C", lib).splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and re.fullmatch(r"[0-9a-f]+", parts[0]) and parts[1] in "tTwW":
            names.setdefault(int(parts[0], 16), parts[2])
    return [names.get(t, hex(t)) for _, t in sorted(targets.items())]


def main():
    lib = sys.argv[1]
    found = constructors(lib)
    if not found:
        sys.exit(f"{lib}: no .init_array found (is this the shared library?)")
    unknown = [c for c in found if not any(re.search(p, c) for p, _ in ALLOWED)]
    for c in found:
        print(("  ok       " if c not in unknown else "  UNKNOWN  ") + c)
    if unknown:
        sys.exit(f"{lib}: {len(unknown)} constructor(s) run at load that no one has looked at: {unknown}\n"
                 "(a dependency's load-time constructor runs in every host process; see c_tests/check_constructors.py)")
    print(f"{len(found)} load-time constructors, all known")


if __name__ == "__main__":
    main()
