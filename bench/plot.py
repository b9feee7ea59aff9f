#!/usr/bin/python3
"""plot.py RESULTS.md... - draw bench/results/NAME.svg next to NAME.md.

Top: the measured series against the reference series, per message size,
read from the results table named in SERIES below (rows of the same size are
combined by their median).  Bottom: every `target:` line, its measured value
and its reference as a fraction of its goal, with the goal at 1.0 (below 1.0
is short of the goal for higher-is-better targets; latency targets say
"lower is better" in their name's unit, and are drawn the same way, so read
their labels).  `vfgx bench NAME` runs this after writing NAME.md."""
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: small files, diffs that read
matplotlib.rcParams["svg.hashsalt"] = "vfgx"  # the same .md gives the same .svg
import matplotlib.pyplot as plt  # noqa: E402

# result file -> (group column or None, x column, measured column,
#                 [reference columns], y label, targets whose goal is in the
#                 series' unit (drawn on it))
SERIES = {
    "pipeline-cpu": (None, "frame B", "Mpps/core", ["floor Mpps/core"], "Mpps per core", r"^cpu_pipeline_"),
    "socket": ("test", "size B", "vfgx (median)", ["sockperf (median)"], "messages/s", r"^socket_"),
    "afxdp": (None, "frame B", "afxdp Mpps", ["reuseport recvmmsg Mpps", "recvmmsg Mpps"], "Mpps", r"^afxdp_"),
    "eba": (None, "size B", "ring MB/s", ["ib_write_bw MB/s", "TCP MB/s"], "MB/s", r"^eba_"),
    "rdma": ("test", "bytes", "vfgx median (min..max)", ["perftest median (min..max)"], "MB/s or usec", r"^rdma_"),
    "dpdk": (None, "round", "vfgx Mpps/CPU-s", ["reference loop Mpps/CPU-s", "testpmd Mpps/CPU-s"], "Mpps per CPU-second", r"^dpdk_"),
}
TARGET = re.compile(r"^target: (\S+) measured=(\S+) reference=(\S+) ratio=\S+ goal=(\S+) met=(yes|no)")


def tables(text):
    """Every markdown table: (header cells, [row cells])."""
    out, cur = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            cur = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cur is None:
            cur = (cells, [])
            out.append(cur)
        elif not all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            cur[1].append(cells)
    return out


def number(s):
    m = re.match(r"^-?[0-9.]+(e[+-]?\d+)?", s.replace(",", ""))
    return float(m.group(0)) if m else None


def series(text, spec):
    """{group: {x: (measured, [references])}} from the first matching table."""
    group, xcol, mcol, rcols = spec[:4]
    for head, rows in tables(text):
        if xcol not in head or mcol not in head or any(r not in head for r in rcols):
            continue
        acc = {}
        for row in rows:
            if len(row) != len(head):
                continue
            x = number(row[head.index(xcol)])
            vals = [number(row[head.index(c)]) for c in [mcol] + rcols]
            if x is None or any(v is None for v in vals):
                continue
            g = row[head.index(group)] if group else ""
            acc.setdefault(g, {}).setdefault(x, []).append(vals)
        return {g: {x: [statistics.median(v[i] for v in pts) for i in range(len(rcols) + 1)]
                    for x, pts in sorted(xs.items())} for g, xs in acc.items()}
    return {}


def plot(md):
    name = os.path.splitext(os.path.basename(md))[0]
    text = open(md).read()
    title = text.splitlines()[0].lstrip("# ").strip() if text else name
    targets = [TARGET.match(l) for l in text.splitlines()]
    # a target not measured in this run ("measured=none") has no bar
    targets = [(m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4)), m.group(5))
               for m in targets if m and "none" not in m.group(2, 3, 4)]
    spec = SERIES.get(name)
    data = series(text, spec) if spec else {}
    panels = len(data) + (1 if targets else 0)
    if panels == 0:
        raise SystemExit("plot.py: %s: no series table and no target lines" % md)
    fig, axes = plt.subplots(panels, 1, figsize=(8, 3.2 * panels), squeeze=False)
    axes = [a[0] for a in axes]
    for ax, (g, xs) in zip(axes, sorted(data.items())):
        x = list(xs)
        ax.plot(x, [v[0] for v in xs.values()], "o-", label="vfgx: " + spec[2], color="tab:blue")
        for i, rc in enumerate(spec[3]):
            ax.plot(x, [v[i + 1] for v in xs.values()], "s--", label="reference: " + rc,
                    color=["tab:orange", "tab:gray", "tab:purple"][i % 3])
        for tname, meas, ref, goal, met in targets:
            size = re.search(r"_(\d+)(B|KB|MB)_", tname + "_")
            if not re.search(spec[5], tname):
                continue
            if g and (g.split(" ")[0] not in tname or "not a target" in g):
                continue
            if size and spec[1] != "round":
                mult = {"B": 1, "KB": 1024, "MB": 1 << 20}[size.group(2)]
                ax.plot([int(size.group(1)) * mult], [goal], "r_", markersize=24, mew=2)
                ax.annotate("goal", (int(size.group(1)) * mult, goal),
                            fontsize=7, color="red", textcoords="offset points", xytext=(6, 4))
            else:
                ax.axhline(goal, color="red", lw=1)
                ax.annotate("goal %s" % tname, (x[0], goal), fontsize=7, color="red",
                            textcoords="offset points", xytext=(2, 3))
        if spec[1] != "round" and len(x) > 1 and max(x) / max(min(x), 1) > 20:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(spec[1])
        ax.set_ylabel(spec[4])
        ax.set_title(("%s: %s" % (title, g)) if g else title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if targets:
        ax = axes[-1]
        names = [t[0] for t in targets]
        pos = range(len(targets))
        ax.barh([p + 0.2 for p in pos], [t[1] / t[3] for t in targets], 0.4,
                label="measured / goal", color=["tab:green" if t[4] == "yes" else "tab:red" for t in targets])
        ax.barh([p - 0.2 for p in pos], [t[2] / t[3] for t in targets], 0.4,
                label="reference / goal", color="tab:gray")
        ax.axvline(1.0, color="red", lw=1, label="goal")
        ax.set_yticks(list(pos))
        ax.set_yticklabels(["%s (met=%s)" % (n, t[4]) for n, t in zip(names, targets)], fontsize=7)
        ax.set_xlabel("fraction of the goal (each target in its own unit)")
        ax.set_title("targets: %s" % title, fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = os.path.splitext(md)[0] + ".svg"
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)
    return out


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: bench/plot.py RESULTS.md...")
    for md in sys.argv[1:]:
        print("wrote " + plot(md))
