"""Helpers the bench scripts share for measuring a process and writing their reports."""

import statistics


def spread(values, digits=0):
    """A cell of a report: the median of `values` with their min–max."""
    values = list(values)
    med = statistics.median(values)
    return f"{med:,.{digits}f} ({min(values):,.{digits}f}–{max(values):,.{digits}f})"


def hwm_mib():
    """This process's high-water mark of resident memory (VmHWM), in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def rotated(items, run):
    """`items` in the order of run number `run`: each run starts one further along."""
    k = run % len(items)
    return items[k:] + items[:k]


def publish(path, lines):
    """Write a report's lines to `path` (Markdown) and print them."""
    text = "\n".join(lines)
    path.write_text(text + "\n")
    print(text)
