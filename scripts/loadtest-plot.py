#!/usr/bin/env python3
"""Plot oploadtest results as SVG files.

    scripts/loadtest-plot.py RESULTS_DIR [OUT_DIR]        (OUT_DIR defaults to RESULTS_DIR)

Reads every RESULTS_DIR/*.json. Each is one workload run; files that are not JSON objects with
"tool": "oploadtest" are skipped with a warning. Any field may be missing; other fields (target,
ops, seed, slots_total, wall_s, outcomes, the latency summaries) are ignored. The fields read:

    {"tool": "oploadtest", "version": 1,
     "label": "loopback 3x2",          free text
     "series": "sim workers, noop",    optional: groups runs into one throughput-vs-workers line
     "workload": "independent",        independent | chain | layered | fan | priority | sleep | ...
     "workers": 3, "throughput_ops_s": 6666.7,
     "latencies_us": {NAME: {"count": 10000, ..., "cdf": [[value_us, percentile 0..100], ...]}, ...},
     "timeline": [{"op": "l0-3", "worker": "w1", "start_us": 0, "end_us": 10234,
                   "outcome": "succeeded" | "failed" | "cancelled"}, ...]}

Writes to OUT_DIR, printing one line per file written:
    throughput_vs_workers.svg  throughput against workers, one line per "series" (runs without a
                               series are included, under their workload name, only if "independent");
                               an axis goes log when its max/min >= 20
    latency_cdf.svg            every non-empty latency CDF but "dispatch" where a run has others
                               (at most 12, newest files first) on a
                               log-µs x axis and a y axis of -log10(1 - p/100), ticks labelled as
                               percentiles; p = 100 (the max) is drawn at 1 - 1/count
    gantt.svg                  the timeline of the run with the fewest timeline entries: one row per
                               worker, overlapping ops put in separate lanes, coloured by outcome
Exit status: 0 if at least one plot was written, 1 if none, 2 on usage errors.
Needs matplotlib (Debian: apt-get install python3-matplotlib).
"""
import glob
import json
import math
import os
import re
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("loadtest-plot: matplotlib is missing (apt-get install python3-matplotlib, or pip install matplotlib)")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import EngFormatter, FormatStrFormatter  # noqa: E402

plt.rcParams.update({"svg.hashsalt": "oploadtest", "svg.fonttype": "none", "font.size": 9})
MAX_CDF_LINES = 12
TAIL_TICKS = [0, 50, 90, 99, 99.9, 99.99, 99.999]
OUTCOME_COLOURS = {"succeeded": "#4c9a2a", "failed": "#d62728", "cancelled": "#9a9a9a"}
LINESTYLES = {"dispatch": "-", "hop": "--", "cancel": ":", "priority_wait": "-.", "cancel_queued": (0, (1, 3)),
              "cancel_running": (0, (3, 1, 1, 1, 1, 1)), "fan_stage": (0, (8, 2)), "probe_held": (0, (2, 2)),
              "probe_draining": (0, (6, 2, 2, 2))}


def warn(msg):
    print("loadtest-plot: " + msg, file=sys.stderr)


def num(x):
    """x as a finite float, or None (bools and strings are not numbers here)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def load_runs(results_dir):
    """[(path, run)] for the valid result files, newest file first (ties by name)."""
    runs = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                run = json.load(f)
        except (OSError, ValueError) as e:
            warn("skipping %s: %s" % (path, e))
            continue
        if not isinstance(run, dict) or run.get("tool") != "oploadtest":
            warn('skipping %s: not an oploadtest result (no "tool": "oploadtest")' % path)
            continue
        runs.append((path, run))
    runs.sort(key=lambda pr: -os.path.getmtime(pr[0]))  # stable: equal mtimes keep name order
    return runs


def text(run, key, default=""):
    v = run.get(key)
    return v if isinstance(v, str) and v else default


def titled(run, name):
    """'<workload> <name> (<label>)', without the parentheses when the run has no label."""
    s = ("%s %s" % (text(run, "workload", "?"), name)).rstrip()
    return s + (" (%s)" % text(run, "label") if text(run, "label") else "")


def finish(fig, ax, labels, out_dir, name, grid="both", **legend):
    """Label the axes (labels: x, y, title), put the legend right of the plot, write OUT_DIR/name."""
    ax.set(xlabel=labels[0], ylabel=labels[1], title=labels[2])
    ax.grid(True, axis=grid, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False, **legend)
    path = os.path.join(out_dir, name)
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    print("wrote " + path)
    return True


def plot_throughput(runs, out_dir):
    series = {}
    for _, run in runs:
        workload = text(run, "workload", "?")
        if not text(run, "series") and workload != "independent":
            continue
        w, t = num(run.get("workers")), num(run.get("throughput_ops_s"))
        if w is None or t is None or w <= 0 or t < 0:
            continue
        series.setdefault(text(run, "series", workload), []).append((w, t))
    if not series:
        warn("no run has a series or is 'independent' with workers and throughput: "
             "throughput_vs_workers.svg not written")
        return False
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name in sorted(series):
        pts = sorted(series[name])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=name)
    ws = [p[0] for pts in series.values() for p in pts]
    ts = [p[1] for pts in series.values() for p in pts if p[1] > 0]
    if max(ws) / min(ws) >= 20:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    if ts and max(ts) / min(ts) >= 20:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(EngFormatter(sep=" "))
    return finish(fig, ax, ("workers", "throughput (ops/s)", "Throughput vs workers"), out_dir,
                  "throughput_vs_workers.svg", title="series")


def tail_y(p, floor):
    """Percentile p -> -log10(1 - p/100), with 1 - p/100 kept >= floor (p = 100 is infinite)."""
    return -math.log10(max(1.0 - p / 100.0, floor))


def plot_latency_cdf(runs, out_dir):
    lines = []  # (label, latency name, run index, xs, ys)
    for i, (_, run) in enumerate(runs):
        lats = run.get("latencies_us")
        if not isinstance(lats, dict):
            continue
        # "dispatch" (ready -> dispatched) is mostly queueing in a saturated run; a run's own latency
        # (hop, cancel, priority_wait, ...) says more, so dispatch is drawn only for runs without one.
        names = sorted(lats)
        if len(names) > 1:
            names = [n for n in names if n != "dispatch"]
        for lname in names:
            lat = lats[lname]
            cdf = lat.get("cdf") if isinstance(lat, dict) else None
            if not isinstance(cdf, list):
                continue
            count = num(lat.get("count")) or 0
            floor = 1.0 / count if count >= 10 else 1e-4  # the max of n samples sits near 1 - 1/n
            pts = sorted((num(pt[0]), num(pt[1])) for pt in cdf if isinstance(pt, list) and len(pt) == 2)
            pts = [(v, p) for v, p in pts if v is not None and p is not None and v > 0 and 0 <= p <= 100]
            if pts:  # (values <= 0 cannot go on a log axis)
                lines.append((titled(run, lname), lname, i, [v for v, _ in pts], [tail_y(p, floor) for _, p in pts]))
    if not lines:
        warn("no run has a non-empty latency cdf: latency_cdf.svg not written")
        return False
    if len(lines) > MAX_CDF_LINES:
        warn("%d latency CDFs; plotting the %d from the newest files" % (len(lines), MAX_CDF_LINES))
        lines = lines[:MAX_CDF_LINES]
    lines.sort(key=lambda line: (os.path.basename(runs[line[2]][0]), line[1]))  # stable legend and colours
    fig, ax = plt.subplots(figsize=(8, 4.8))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    run_colour = {}
    for label, lname, i, xs, ys in lines:
        k = run_colour.setdefault(i, len(run_colour))  # one colour per run (markers differ past 10 runs)
        ax.plot(xs, ys, linestyle=LINESTYLES.get(lname, (0, (5, 1, 1, 1))), color=colours[k % len(colours)],
                marker=".x+"[k // len(colours) % 3], markevery=max(1, len(xs) // 25), label=label)
    ax.set_xscale("log")
    top = max([3.0] + [y for line in lines for y in line[4]])  # show at least up to 99.9%
    ticks = [p for p in TAIL_TICKS if tail_y(p, 1e-9) <= top + 1e-9]
    ax.set_yticks([tail_y(p, 1e-9) for p in ticks])
    ax.set_yticklabels(["%g%%" % p for p in ticks])
    ax.set_ylim(0, top * 1.04)
    return finish(fig, ax, ("latency (µs, log scale)", "percentile (tail-stretched)", "Latency distributions"),
                  out_dir, "latency_cdf.svg", fontsize=8)


def assign_lanes(bars):
    """Greedy first-fit by start time: bars [(start, end, outcome)] -> [(lane, start, end, outcome)].

    An op's end is when the coordinator heard of it, a little after the worker freed the slot, so a
    bar may overlap the next one in its slot by that much: up to 1 ms (or 5 %) still fits a lane."""
    lane_ends, out = [], []
    for start, end, outcome in sorted(bars):
        slack = max(1.0, 0.05 * (end - start))
        lane = next((k for k, e in enumerate(lane_ends) if e <= start + slack), len(lane_ends))
        lane_ends[lane:lane + 1] = [end]  # replaces that lane's end, or appends a new lane
        out.append((lane, start, end, outcome))
    return out


def plot_gantt(runs, out_dir):
    candidates = [(len(r["timeline"]), os.path.basename(p), r) for p, r in runs
                  if isinstance(r.get("timeline"), list) and r["timeline"]]
    if not candidates:
        warn("no run has a non-empty timeline: gantt.svg not written")
        return False
    _, name, run = min(candidates, key=lambda c: c[:2])
    rows = {}
    for e in run["timeline"]:
        if not isinstance(e, dict):
            continue
        start, end = num(e.get("start_us")), num(e.get("end_us"))
        if start is None or end is None or end < start:
            continue
        outcome = e.get("outcome") if isinstance(e.get("outcome"), str) else "unknown"
        rows.setdefault(str(e.get("worker", "?")), []).append((start / 1e3, end / 1e3, outcome))
    if not rows:
        warn("the timeline of %s has no usable entries: gantt.svg not written" % name)
        return False
    workers = sorted(rows, key=natural_key)
    lanes = {w: assign_lanes(rows[w]) for w in workers}
    nlanes = {w: 1 + max(b[0] for b in lanes[w]) for w in workers}
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * sum(nlanes.values()) + 0.15 * len(workers)))
    outcomes = {b[3] for w in workers for b in lanes[w]}
    extra = sorted(outcomes - set(OUTCOME_COLOURS))  # e.g. "unknown": other colours, after the usual three
    colours = dict(OUTCOME_COLOURS, **{o: c for o, c in zip(extra, ["#1f77b4", "#ff7f0e", "#9467bd"] * 9)})
    y, centres = 0.0, []
    for w in workers:
        for lane, start, end, outcome in lanes[w]:
            ax.barh(y + lane, end - start, left=start, height=0.8, color=colours[outcome],
                    edgecolor="white", linewidth=0.5)
        centres.append(y + (nlanes[w] - 1) / 2)
        y += nlanes[w] + 0.5
        ax.axhline(y - 0.75, color="#cccccc", linewidth=0.6)
    ax.set_yticks(centres)
    ax.set_yticklabels(["%s\n(%d lane%s)" % (w, nlanes[w], "s" * (nlanes[w] != 1)) for w in workers])
    ax.set_ylim(y - 0.75, -0.75)  # first worker at the top
    ax.set_xlim(left=0)
    order = [o for o in OUTCOME_COLOURS if o in outcomes] + extra
    title = "Timeline: %s, %d ops" % (titled(run, ""), sum(len(v) for v in rows.values()))
    return finish(fig, ax, ("time since run start (ms)", "worker", title), out_dir, "gantt.svg", grid="x",
                  handles=[Patch(color=colours[o], label=o) for o in order], title="outcome")


def main(argv):
    if len(argv) not in (2, 3) or argv[1] in ("-h", "--help"):
        print("usage: scripts/loadtest-plot.py RESULTS_DIR [OUT_DIR]", file=sys.stderr)
        return 2
    results_dir = argv[1]
    out_dir = argv[2] if len(argv) == 3 else results_dir
    if not os.path.isdir(results_dir):
        print("loadtest-plot: %s is not a directory" % results_dir, file=sys.stderr)
        return 2
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        print("loadtest-plot: cannot create %s: %s" % (out_dir, e), file=sys.stderr)
        return 2
    runs = load_runs(results_dir)
    if not runs:
        warn("no oploadtest results in %s" % results_dir)
        return 1
    written = [plot_throughput(runs, out_dir), plot_latency_cdf(runs, out_dir), plot_gantt(runs, out_dir)]
    return 0 if any(written) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
