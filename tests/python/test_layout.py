"""The README's layout table says where everything is: every folder of src/ has its row, and
every module of a folder is named in it (issue 59: the table had missed 8 modules of src/ and
10 of src/write/ without anyone noticing). Run from any directory; needs nothing built."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def layout_rows() -> dict:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Layout"):]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `(src/[^`]*)` \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = set(re.findall(r"`([A-Za-z_0-9]+)`", m.group(2)))
    return rows


def test_every_src_folder_has_a_row_naming_each_of_its_modules():
    rows = layout_rows()
    assert "src/" in rows, "the layout table has no src/ row"
    missing = []
    for folder in sorted({p.parent for p in (ROOT / "src").rglob("*.rs")}):
        key = folder.relative_to(ROOT).as_posix() + "/"
        if key not in rows:
            missing.append(f"no row for {key}")
            continue
        for module in sorted(p.stem for p in folder.glob("*.rs")):
            if module == "lib" or (module == "mod" and key == "src/ffi/"):
                continue  # the crate root; the ABI's shared argument helpers
            if module not in rows[key]:
                missing.append(f"{key}{module}.rs is not named in the row of {key}")
    assert not missing, "README.md's layout table is out of date:\n" + "\n".join(missing)


def test_the_table_names_no_module_that_is_gone():
    """A name the table describes — `name` (what it holds) — is a module or folder that exists."""
    text = (ROOT / "README.md").read_text()
    stale = []
    for key in layout_rows():
        folder = ROOT / key
        assert folder.is_dir(), f"the layout table has a row for {key}, which does not exist"
        line = next(l for l in text.splitlines() if l.startswith(f"| `{key}` |"))
        for name in re.findall(r"`([a-z_0-9]+)` \(", line):
            if not (folder / f"{name}.rs").exists() and not (folder / name).is_dir():
                stale.append(f"{key}{name}")
    assert not stale, f"the layout table describes modules that are gone: {stale}"
