#!/usr/bin/python3
"""Render a fabricgen tests report (report.json, "schema": "tests") as
report.md and report.html with figures, in the ten sections the draft asks
for. report.json stays the source of truth: every number here is read from it.

usage: tools/report.py REPORT_JSON [--out DIR]   (default: the JSON's directory)

Figures (PNG, also embedded in the HTML): throughput vs frame size, the latency
histogram and CDF of each latency test, absorbed burst vs incast ratio; for
collectives busbw vs size (and vs ranks), each point's iteration times, and
the JCT Ratio over the compute time.
Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import argparse
import base64
import html
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SECTIONS = [
    "1. DUT identification", "2. Test topology", "3. Test configuration", "4. Observation points",
    "5. Host configuration", "6. Results", "7. Anomalies", "8. Trial accounting", "9. Repeatability",
    "10. Comparability",
]


# Counts the figures that loaded and are not blank (more than 1 % of their
# pixels differ from white) and says so in the page title, so a headless
# browser's dump shows whether every figure rendered.
CHECK_SCRIPT = """<script>
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.fig'), ok = 0;
  imgs.forEach(function (img) {
    if (!img.complete || img.naturalWidth === 0) return;
    var c = document.createElement('canvas');
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    var g = c.getContext('2d'); g.drawImage(img, 0, 0);
    var px = g.getImageData(0, 0, c.width, c.height).data, ink = 0;
    for (var i = 0; i < px.length; i += 4) if (px[i] < 250 || px[i + 1] < 250 || px[i + 2] < 250) ink++;
    if (ink > c.width * c.height / 100) { ok++; img.setAttribute('data-rendered', 'yes'); }
  });
  document.title = 'fabricgen report: ' + ok + ' of ' + imgs.length + ' figures rendered';
});
</script>"""


def fmt_bps(v):
    for unit, div in (("Tbit/s", 1e12), ("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if v >= div:
            return "%.3f %s" % (v / div, unit)
    return "%.0f bit/s" % v


def fmt_ns(v):
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if v >= div:
            return "%.3f %s" % (v / div, unit)
    return "%.0f ns" % v


class Doc:
    """Markdown and HTML written side by side."""

    def __init__(self):
        self.md, self.html = [], []

    def h(self, level, text):
        self.md.append("%s %s\n" % ("#" * level, text))
        self.html.append("<h%d>%s</h%d>" % (level, html.escape(text), level))

    def p(self, text):
        self.md.append(text + "\n")
        self.html.append("<p>%s</p>" % html.escape(text))

    def table(self, head, rows):
        self.md.append("| " + " | ".join(head) + " |")
        self.md.append("|" + "---|" * len(head))
        for r in rows:
            self.md.append("| " + " | ".join(str(c) for c in r) + " |")
        self.md.append("")
        cells = "".join("<th>%s</th>" % html.escape(str(c)) for c in head)
        body = "".join("<tr>" + "".join("<td>%s</td>" % html.escape(str(c)) for c in r) + "</tr>" for r in rows)
        self.html.append("<table><tr>%s</tr>%s</table>" % (cells, body))

    def figure(self, path, caption):
        self.md.append("![%s](%s)\n" % (caption, os.path.basename(path)))
        with open(path, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        self.html.append('<figure><img class="fig" alt="%s" src="data:image/png;base64,%s"><figcaption>%s</figcaption>'
                         "</figure>" % (html.escape(caption), data, html.escape(caption)))


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def throughput_figure(tests, out):
    """Throughput (L1) of every goal against the message size of a matrix cell
    (else the test's mean frame size), one line per goal, QP count and direction."""
    fig, ax = plt.subplots(figsize=(7, 4))
    series = {}
    matrix = any("matrix_cell" in t for t in tests)
    if matrix:  # one axis: the matrix's message sizes
        tests = [t for t in tests if "matrix_cell" in t]
    for t in tests:
        cell = t.get("matrix_cell", {})
        x = cell.get("message_size_bytes") or t["mean_frame_size_bytes"]
        for g in t["goals"]:
            if g["found"]:
                key = g["name"]
                if cell.get("qps"):
                    key += ", %d QPs" % cell["qps"]
                if "direction" in cell and any(c.get("matrix_cell", {}).get("direction") == "bi" for c in tests):
                    key += ", " + cell["direction"]
                series.setdefault(key, []).append((x, g["throughput_bps_l1"] / 1e9))
    for name, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    line = max(t["line_rate_bps_l1"] for t in tests) / 1e9
    ax.axhline(line, color="grey", linestyle="--", label="line rate")
    ax.set_xlabel("message size (bytes)" if matrix else "frame size (bytes, FCS included)")
    if matrix:
        ax.set_xscale("log")
    ax.set_ylabel("throughput (Gbit/s, L1)")
    ax.set_ylim(0, line * 1.1)
    ax.legend()
    ax.set_title("Throughput vs message size" if matrix else "Throughput vs frame size")
    return save(fig, out, "throughput.png")


def latency_figure(t, out, index):
    buckets = t["pooled"]["histogram_ns"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    lows = [b[0] for b in buckets]
    counts = [b[2] for b in buckets]
    a1.bar(lows, counts, width=[b[1] for b in buckets], align="edge")
    a1.set_xscale("log")
    a1.set_xlabel("latency (ns)")
    a1.set_ylabel("samples")
    a1.set_title("Histogram: %s" % t["name"])
    total = float(sum(counts)) or 1.0
    cum, acc = [], 0
    for c in counts:
        acc += c
        cum.append(acc / total)
    a2.step([b[0] + b[1] for b in buckets], cum, where="post")
    a2.set_xscale("log")
    a2.set_xlabel("latency (ns)")
    a2.set_ylabel("fraction of samples <= x")
    a2.set_ylim(0, 1.02)
    a2.set_title("CDF: %s" % t["name"])
    return save(fig, out, "latency-%d.png" % index)


def burst_figure(tests, out):
    fig, ax = plt.subplots(figsize=(7, 4))
    pts = sorted((p["senders"], p["absorbed_burst_frames_per_sender"]) for t in tests for p in t["incast"])
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o")
    ax.set_xlabel("incast ratio (senders : 1)")
    ax.set_ylabel("absorbed burst (frames per sender)")
    ax.set_xticks([p[0] for p in pts])
    ax.set_ylim(0, max(p[1] for p in pts) * 1.2 + 1)
    ax.set_title("Burst absorption vs incast ratio")
    return save(fig, out, "burst.png")


def ecn_figure(t, index, out):
    """Marking probability vs queue depth (each bin's frames marked CE over its frames), with the measured and the
    configured Kmin, Kmax and Pmax."""
    fig, ax = plt.subplots(figsize=(7, 4))
    bins = [b for b in t["bins"] if b["frames"]]
    width = t["parameters"]["bin_bytes"] / 1e3
    ax.bar([b["depth_bytes"] / 1e3 for b in bins], [b["probability"] for b in bins], width=width * 0.9,
           align="edge", label="measured (CE-marked frames / frames)")
    conf = t["parameters"]["configured"]
    if conf:
        ax.plot([0, conf["kmin_bytes"] / 1e3, conf["kmax_bytes"] / 1e3, conf["kmax_bytes"] / 1e3,
                 max(conf["kmax_bytes"] / 1e3, bins[-1]["depth_bytes"] / 1e3 + width if bins else 0)],
                [0, 0, conf["pmax"], 1, 1], color="k", linestyle="--", label="configured")
    for key, style in (("kmin_bytes", ":"), ("kmax_bytes", "-.")):
        if t[key] is not None:
            ax.axvline(t[key] / 1e3, color="tab:red", linestyle=style, label="measured %s" % key.split("_")[0].title())
    ax.set_xlabel("queue depth (kB, from latency x bottleneck rate)")
    ax.set_ylabel("marking probability")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    ax.set_title("ECN marking vs depth: %s" % t["name"])
    return save(fig, out, "ecn-%d.png" % index)


def convergence_figure(t, index, out):
    """Each point's QP rates over time (the first repetition; up to 16 QPs of each group), with Jain's fairness
    index of the QPs' window rates beside them (right axis)."""
    pts = [p for p in t["points"] if p["rates"]["qps"]]
    fig, axes = plt.subplots(len(pts), 1, figsize=(9, 3 * len(pts)), squeeze=False)
    for ax, p in zip(axes[:, 0], pts):
        jfi = p.get("jfi", {"t_ns": [], "values": []})
        if jfi["values"]:
            ax2 = ax.twinx()
            # Each window's index drawn over its window (t_ns is its start).
            w = t["parameters"].get("window_ns", 0)
            xs = [x / 1e6 for x in jfi["t_ns"]] + ([(jfi["t_ns"][-1] + w) / 1e6] if w else [])
            ys = jfi["values"] + (jfi["values"][-1:] if w else [])
            ax2.plot(xs, ys, color="tab:red", linewidth=1.2, drawstyle="steps-post")
            ax2.set_ylim(0, 1.05)
            ax2.set_ylabel("JFI per window", color="tab:red")
        ts = [x / 1e6 for x in p["rates"]["t_ns"]]
        for q in p["rates"]["qps"]:
            ax.plot(ts, [v / 1e6 for v in q["bps"]], linewidth=0.8, drawstyle="steps-post",
                    linestyle="-" if q["qp"][0] == "a" else "--")
        ax.axhline(p["fair_share_bps"] / 1e6, color="k", linewidth=0.6)
        ax.axvline(t["parameters"]["t0_ns"] / 1e6, color="grey", linewidth=0.6)
        ax.set_ylabel("rate (Mbit/s)")
        ax.set_title("m %d + %d, %s: %s" % (p["m"], p["m"], p["parameter_set"],
                                            "converged in %s" % fmt_ns(p["convergence_ns"]) if p["converged"]
                                            else "not converged"))
    axes[-1, 0].set_xlabel("time since the trial's start (ms); solid: first m QPs, dashed: the m from t0; red: JFI")
    return save(fig, out, "dcqcn-%d.png" % index)


def busbw_figure(t, index, out, against):
    """busbw (mean, GB/s as nccl-tests) against the size, one line per rank count, or against the ranks, one line
    per size."""
    fig, ax = plt.subplots(figsize=(7, 4))
    series = {}
    for p in t["points"]:
        key, x = (("%d ranks" % p["ranks"], p["size_bytes"]) if against == "size"
                  else ("%d B" % p["size_bytes"], p["ranks"]))
        series.setdefault(key, []).append((x, p["busbw_bps"]["mean"] / 8e9))
    for name, pts in sorted(series.items()):
        pts.sort()
        ax.plot([q[0] for q in pts], [q[1] for q in pts], marker="o", label=name)
    if against == "size":
        ax.set_xscale("log", base=2)
    ax.set_xlabel("size S (bytes)" if against == "size" else "ranks N")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_ylim(bottom=0)
    ax.legend()
    ax.set_title("%s: busbw vs %s" % (t["name"], "size" if against == "size" else "ranks"))
    return save(fig, out, "busbw-%s-%d.png" % (against, index))


def iterations_figure(t, index, out):
    """Every counted iteration's time, one line per point (failed ones drawn at 0)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for p in t["points"]:
        its = p["iterations"]
        ax.plot([i["index"] for i in its], [i["duration_ns"] / 1e6 for i in its], marker=".",
                label="%d ranks, %d B" % (p["ranks"], p["size_bytes"]))
    ax.set_xlabel("iteration")
    ax.set_ylabel("time (ms)")
    ax.set_ylim(bottom=0)
    ax.legend()
    ax.set_title("%s: time per iteration" % t["name"])
    return save(fig, out, "iterations-%d.png" % index)


def jct_figure(t, index, out):
    fig, ax = plt.subplots(figsize=(7, 4))
    pts = sorted((p["compute_ns"] / 1e6, p["jct_ratio"]) for p in t["points"])
    ax.plot([q[0] for q in pts], [q[1] for q in pts], marker="o")
    ax.axhline(1.0, color="grey", linestyle="--", label="roofline")
    ax.set_xlabel("compute C (ms)")
    ax.set_ylabel("JCT Ratio (JCT / roofline)")
    ax.set_ylim(bottom=0)
    ax.legend()
    ax.set_title("%s: JCT Ratio vs compute" % t["name"])
    return save(fig, out, "jct-%d.png" % index)


def render(rep, out):
    d = Doc()
    tests = rep["tests"]
    by_kind = {k: [t for t in tests if t["kind"] == k]
               for k in ("throughput", "latency", "burst", "load_balance", "dcqcn_convergence", "collective", "jct",
                         "multi_tenant", "ecn_marking")}
    d.h(1, "fabricgen report: %s" % (rep["plan"]["name"] or rep["plan"]["file"]))
    d.p("Plan %s, started %s, fabricgen %s. %s" % (
        rep["plan"]["file"], rep["started_utc"], rep["tool"]["version"],
        "Complete." if rep["complete"] else "INCOMPLETE: the run was interrupted or a test stopped early."))
    d.p("Indicative values from the draft appear as context only; nothing in this report is a pass/fail verdict.")

    d.h(2, SECTIONS[0])
    if rep["dut"]:
        d.table(["field", "value"], sorted(rep["dut"].items()))
    else:
        d.p("Not given (plan key dut:).")
    d.h(2, SECTIONS[1])
    d.p(rep["topology"] or "Not given (plan key topology:).")
    d.table(["port", "device", "driver", "line rate (L1)"],
            [(p["name"], p["device"], p["driver"], fmt_bps(p["line_rate_bps_l1"])) for p in rep["environment"]["ports"]])
    d.h(2, SECTIONS[2])
    rows = []
    for t in tests:
        params = ", ".join("%s=%s" % kv for kv in t["parameters"].items())
        rows.append((t["name"], t["kind"], ", ".join(t["streams"]), params))
    d.table(["test", "kind", "streams", "parameters"], rows)
    d.h(2, SECTIONS[3])
    d.table(["test", "observation point"], [(t["name"], t["observation_point"]) for t in tests])
    d.table(["port", "RX timestamps"], [(p["name"], p["rx_timestamps"]) for p in rep["environment"]["ports"]])
    d.h(2, SECTIONS[4])
    host = [("EAL arguments", " ".join(rep["environment"]["eal_args"])), ("memory", rep["environment"]["memory"]),
            ("TSC", "%d Hz" % rep["environment"]["tsc_hz"])] + sorted(rep["host"].items())
    d.table(["field", "value"], host)

    d.h(2, SECTIONS[5])
    figures = 0
    # The draft's connection initiation latency: each trial's QPs set up by CM
    # MADs (frame.roce.connect: cm) before its data, from a QP's first REQ to its RTU.
    setups = [(t["name"], tr) for t in tests for tr in t.get("trials", []) if tr.get("qp_setup")]
    if setups:
        d.h(3, "Connection initiation latency")
        d.table(["test", "trial", "QPs", "method", "p50", "p99", "max", "all set up in", "set-up rate",
                 "MADs sent again"],
                [(name, tr["index"], tr["qp_setup"]["count"], "CM REQ/REP/RTU", fmt_ns(tr["qp_setup"]["p50_ns"]),
                  fmt_ns(tr["qp_setup"]["p99_ns"]), fmt_ns(tr["qp_setup"]["max_ns"]),
                  fmt_ns(tr["qp_setup"]["elapsed_ns"]), "%.0f QPs/s" % tr["qp_setup"]["setup_rate_per_s"],
                  tr["qp_setup"]["mads_resent"]) for name, tr in setups])
    if by_kind["throughput"]:
        d.h(3, "Throughput")
        rows = []
        for t in by_kind["throughput"]:
            for g in t["goals"]:
                rows.append((t["name"], t["search"], "%.0f B" % t["mean_frame_size_bytes"], g["name"],
                             "%.3f %%" % (g["loss_ratio_goal"] * 100),
                             "%.3f %%" % (g["lower_bound_fraction_of_line"] * 100) if g["found"] else "not found",
                             fmt_bps(g["throughput_bps_l1"]), fmt_bps(g["throughput_bps_l2"]),
                             "%.0f" % g["throughput_pps"]))
        d.table(["test", "search", "frame", "goal", "loss goal", "load (% of line)", "L1", "L2 (FCS incl.)",
                 "frames/s"], rows)
        d.p("Context (the draft's indicative, non-normative reference values; never a pass/fail verdict): aggregate "
            "throughput >= 95 % of bisection bandwidth; packet drop rate 0 ppm wire-level loss for lossless RoCEv2 "
            "profiles.")
        d.figure(throughput_figure(by_kind["throughput"], out), "Throughput vs frame size")
        figures += 1
    for i, t in enumerate(by_kind["latency"]):
        d.h(3, "Latency: %s" % t["name"])
        p = t["pooled"]
        d.table(["samples", "min", "mean", "P50", "P95", "P99", "P99.9", "P99.99", "max"],
                [(p["samples"], fmt_ns(p["min_ns"]), fmt_ns(p["mean_ns"]), fmt_ns(p["p50_ns"]), fmt_ns(p["p95_ns"]),
                  fmt_ns(p["p99_ns"]), fmt_ns(p["p99_9_ns"]), fmt_ns(p["p99_99_ns"]), fmt_ns(p["max_ns"]))])
        d.table(["run", "samples", "min", "P50", "P99", "max", "loss"],
                [(r["trial_index"], r["samples"], fmt_ns(r["min_ns"]), fmt_ns(r["p50_ns"]), fmt_ns(r["p99_ns"]),
                  fmt_ns(r["max_ns"]), "%.4f %%" % (r["loss_ratio"] * 100)) for r in t["runs"]])
        if "increase_factor" in t:
            f = t["increase_factor"]
            d.p("Latency increase factor against %s: P50 x%.2f, P99 x%.2f." % (f["against"], f["p50_ratio"],
                                                                                f["p99_ratio"]))
        d.figure(latency_figure(t, out, i), "Latency histogram and CDF: %s" % t["name"])
        figures += 1
    if by_kind["burst"]:
        d.h(3, "Burst absorption")
        d.table(["test", "incast", "virtual senders", "absorbed (frames per sender)", "first loss"],
                [(t["name"], p["incast_ratio"], p["virtual_senders_sharing_a_port"],
                  p["absorbed_burst_frames_per_sender"] if p["found"] else "none",
                  p["first_loss_burst_frames_per_sender"] or "none up to max")
                 for t in by_kind["burst"] for p in t["incast"]])
        d.figure(burst_figure(by_kind["burst"], out), "Absorbed burst vs incast ratio")
        figures += 1
    for t in by_kind["load_balance"]:
        d.h(3, "Load balance: %s" % t["name"])
        d.p("%d flows over %d parallel links; the DUT's own transmit counters (L_i = bytes on link i). "
            "MMR = max L_i / mean L_i (1 is even), JFI = (sum L_i)^2 / (N sum L_i^2) (1/N to 1). "
            "The links carried %d frames; the analyzer received %d."
            % (t["flows"], len(t["links"]), t["link_packets"], t["rx_frames_unique"]))
        total = sum(l["tx_bytes"] for l in t["links"]) or 1
        d.table(["link", "frames", "bytes", "share"],
                [(l["name"], l["tx_packets"], l["tx_bytes"], "%.2f %%" % (100.0 * l["tx_bytes"] / total))
                 for l in t["links"]] + [("MMR %.4f" % t["mmr"], "", "", "JFI %.4f" % t["jfi"])])
    for i, t in enumerate(by_kind["ecn_marking"]):
        d.h(3, "ECN marking: %s" % t["name"])
        conf = t["parameters"]["configured"]
        fmt_b = lambda v: "%.0f B" % v if v is not None else "not seen"
        d.p("Each frame's queue depth is (latency - base latency %s) x the bottleneck's %s; %d of %d frames marked. "
            "Measured Kmin %s, Kmax %s, Pmax %s%s." % (
                fmt_ns(t["base_latency_ns"]), fmt_bps(t["parameters"]["bottleneck_bps"]), t["marked"], t["frames"],
                fmt_b(t["kmin_bytes"]), fmt_b(t["kmax_bytes"]),
                "%.1f %%" % (100 * t["pmax"]) if t["pmax"] is not None else "not seen",
                "; configured %d B, %d B, %.1f %% (deviation %s, %s, %s)" % (
                    conf["kmin_bytes"], conf["kmax_bytes"], 100 * conf["pmax"],
                    fmt_b(t["deviation"]["kmin_bytes"]), fmt_b(t["deviation"]["kmax_bytes"]),
                    "%+.1f points" % (100 * t["deviation"]["pmax"]) if t["deviation"]["pmax"] is not None else "-")
                if conf else ""))
        d.table(["depth (B)", "frames", "marked", "probability"],
                [(b["depth_bytes"], b["frames"], b["marked"], "%.4f" % b["probability"]) for b in t["bins"]
                 if b["frames"]])
        d.figure(ecn_figure(t, i, out), "Marking probability vs queue depth: %s" % t["name"])
        figures += 1
    for i, t in enumerate(by_kind["dcqcn_convergence"]):
        d.h(3, "DCQCN convergence: %s" % t["name"])
        d.p("m QPs share the bottleneck, m more start at t0 = %s; converged: every QP's rate, averaged over windows "
            "of %s, within %.1f %% of the fair share (what the bottleneck delivered over 2m) for %s."
            % (fmt_ns(t["parameters"]["t0_ns"]), fmt_ns(t["parameters"]["window_ns"]),
               t["parameters"]["tolerance"] * 100, fmt_ns(t["parameters"]["hold_ns"])))
        # The first repetition's end state and what the loop did: how far from
        # fair the QPs ended, the wire's loss, CE marks and CNPs (a `none` set
        # is the open-loop contrast).
        d.table(["m", "parameter set", "repetitions", "converged", "convergence time (median)", "fair share",
                 "ended within", "lost", "CE marks", "CNPs sent / suppressed"],
                [(p["m"], p["parameter_set"], len(p["runs"]), "yes" if p["converged"] else "no",
                  fmt_ns(p["convergence_ns"]) if p["converged"] else "-", fmt_bps(p["fair_share_bps"]),
                  "%.1f %%" % (100 * p["runs"][0]["final_deviation"])
                  if p["runs"] and p["runs"][0]["final_deviation"] is not None else "-",
                  "%d of %d" % (p["runs"][0]["lost_packets"], p["runs"][0]["tx_packets"]) if p["runs"] else "-",
                  p["runs"][0]["ecn_ce_packets"] if p["runs"] else "-",
                  "%d / %d" % (p["runs"][0]["cnp_sent"], p["runs"][0]["cnp_suppressed"]) if p["runs"] else "-")
                 for p in t["points"]])
        if any(p["rates"]["qps"] for p in t["points"]):
            d.figure(convergence_figure(t, i, out), "QP rates over time: %s" % t["name"])
            figures += 1
    for i, t in enumerate(by_kind["collective"]):
        d.h(3, "Collective: %s (%s, %s)" % (t["name"], t["parameters"]["op"], t["parameters"]["algorithm"]))
        d.p("As nccl-tests prints it: time in us, algbw = S / t and busbw = algbw x bus factor in GB/s (10^9 bytes a "
            "second). Barriers reproduced: %s; flows schedule-driven: %s; stragglers modelled: %s."
            % ("yes" if t["statement"]["barriers_reproduced"] else "no",
               "yes" if t["statement"]["flows_schedule_driven"] else "no", t["statement"]["stragglers_modelled"]))
        d.table(["ranks", "size (B)", "count (elements)", "type", "redop", "time (us)", "algbw (GB/s)", "busbw (GB/s)",
                 "#wrong", "busbw p99 (GB/s)", "efficiency", "S_fabric (B)", "retransmitted (B)"],
                [(p["ranks"], p["size_bytes"], p["count"], p["type"], p["redop"], "%.1f" % (p["time_ns"]["mean"] / 1e3),
                  "%.2f" % (p["algbw_bps"] / 8e9), "%.2f" % (p["busbw_bps"]["mean"] / 8e9), p["wrong"],
                  "%.2f" % (p["busbw_bps"]["p99"] / 8e9), "%.1f %%" % (100 * p["busbw_efficiency"]),
                  p["s_fabric_bytes"], p["retransmitted_bytes"]) for p in t["points"]])
        d.figure(busbw_figure(t, i, out, "size"), "busbw vs size: %s" % t["name"])
        figures += 1
        if len({p["ranks"] for p in t["points"]}) > 1:
            d.figure(busbw_figure(t, i, out, "ranks"), "busbw vs ranks: %s" % t["name"])
            figures += 1
        d.figure(iterations_figure(t, i, out), "Time per iteration: %s" % t["name"])
        figures += 1
    for i, t in enumerate(by_kind["jct"]):
        d.h(3, "JCT: %s (%s, %d ranks, %d B)" % (t["name"], t["op"], t["ranks"], t["size_bytes"]))
        d.p("Communication alone: %s. Roofline_seq = C + 8 S x %.3f / B_acc, B_acc = %s a rank. The JCT Ratio is "
            "context, never a verdict." % (fmt_ns(t["comm_ns"]), t["bus_factor"], fmt_bps(t["rank_line_bps"])))
        d.table(["compute", "JCT mean", "P50", "P99", "roofline", "JCT Ratio", "overlap set", "overlap measured",
                 "#wrong"],
                [(fmt_ns(p["compute_ns"]), fmt_ns(p["jct_ns"]["mean"]), fmt_ns(p["jct_ns"]["p50"]),
                  fmt_ns(p["jct_ns"]["p99"]), fmt_ns(p["roofline_ns"]), "%.3f" % p["jct_ratio"],
                  "%.0f %%" % (100 * p["overlap_fraction"]), "%.2f" % p["measured_overlap_fraction"], p["wrong"])
                 for p in t["points"]])
        d.figure(jct_figure(t, i, out), "JCT Ratio vs compute: %s" % t["name"])
        figures += 1
    for t in by_kind["multi_tenant"]:
        d.h(3, "Multi-tenant: %s" % t["name"])
        d.table(["job", "ranks", "isolated JCT", "shared JCT", "interference factor", "#wrong"],
                [(j["name"], j["ranks"], fmt_ns(j["isolated_jct_ns"]), fmt_ns(j["shared_jct_ns"]),
                  "%.3f" % j["interference_factor"], j["wrong"]) for j in t["jobs"]])
    # A kind this script has no section for yet: its scalar results as written.
    common = {"name", "kind", "streams", "parameters", "complete", "stopped_because", "trial_accounting", "trials"}
    for t in tests:
        if t["kind"] in by_kind:
            continue
        d.h(3, "%s: %s" % (t["kind"], t["name"]))
        d.table(["field", "value"], [(k, v) for k, v in t.items()
                                     if k not in common and isinstance(v, (str, int, float, bool))])

    d.h(2, SECTIONS[6])
    anomalies = [(t["name"], t.get("stopped_because", "")) for t in tests if not t["complete"]]
    for t in by_kind["latency"]:
        lossy = [r for r in t["runs"] if r["loss_ratio"] > 0]
        if lossy:
            anomalies.append((t["name"], "%d of %d runs lost frames" % (len(lossy), len(t["runs"]))))
    for t in by_kind["collective"]:
        for p in t["points"]:
            if p["wrong"]:
                anomalies.append((t["name"], "%d ranks, %d B: %d iteration(s) failed or not run" % (
                    p["ranks"], p["size_bytes"], p["wrong"])))
    if anomalies:
        d.table(["test", "anomaly"], anomalies)
    else:
        d.p("None recorded.")
    d.h(2, SECTIONS[7])
    d.table(["test", "attempted", "included", "excluded", "why excluded", "counted trial-seconds"],
            [(t["name"], t["trial_accounting"]["attempted"], t["trial_accounting"]["included"],
              t["trial_accounting"]["excluded"],
              "; ".join(sorted({x["excluded_because"] for x in t["trials"] if not x["included"]})) or "-",
              "%.1f" % t["trial_accounting"]["included_trial_seconds"]) for t in tests])
    d.h(2, SECTIONS[8])
    rows = [(t["name"], len(t["runs"]), "%.2f %%" % (t["cv_of_run_p50"] * 100)) for t in by_kind["latency"]]
    if rows:
        d.table(["latency test", "runs", "CV of the runs' P50"], rows)
    rows = [(t["name"], g["name"], t["parameters"]["repetitions"], "%.2f %%" % (g["cv_of_repetitions"] * 100))
            for t in by_kind["throughput"] for g in t["goals"]]
    if rows:
        d.table(["throughput test", "goal", "searches", "CV of their results"], rows)
    rows = []
    for t in by_kind["collective"]:
        for p in t["points"]:
            # The iterations the point's figures are over: completed, and not held up by the tester
            # (all completed ones when every one was).
            done = [i for i in p["iterations"] if not i["failed"]]
            ts = [i["duration_ns"] for i in done if not i.get("tester_held")] or [i["duration_ns"] for i in done]
            if len(ts) > 1:
                m = sum(ts) / len(ts)
                sd = (sum((x - m) ** 2 for x in ts) / (len(ts) - 1)) ** 0.5
                rows.append((t["name"], p["ranks"], p["size_bytes"], len(ts), "%.2f %%" % (100 * sd / m)))
    if rows:
        d.table(["collective test", "ranks", "size (B)", "iterations", "CV of their times"], rows)
    d.p("Burst searches judge every length over all its repetitions at once (one lost frame fails it). The draft "
        "names a CV of 5 % as an illustrative reference point for run-to-run variation, not a validity threshold.")
    d.h(2, SECTIONS[9])
    d.p("When comparing fabrics, state for both: the number of hosts and accelerators per node and their "
        "placement, the per-accelerator bandwidth, oversubscription, the collective and message size, the transport "
        "and service, the load-balancing strategy, and the observation point above.")

    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(d.md) + "\n")
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>fabricgen report</title><style>"
            "body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse;margin:8px 0}"
            "td,th{border:1px solid #bbb;padding:3px 6px;font-size:13px}img.fig{max-width:100%%}</style></head>"
            "<body data-figures='%d'>%s%s</body></html>" % (figures, "\n".join(d.html), CHECK_SCRIPT))
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(page)
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report")
    ap.add_argument("--out")
    a = ap.parse_args()
    with open(a.report) as f:
        rep = json.load(f)
    if rep.get("schema") != "tests":
        sys.exit("report.py: %s is not a tests report (a plan with tests: writes one)" % a.report)
    out = a.out or os.path.dirname(os.path.abspath(a.report))
    os.makedirs(out, exist_ok=True)
    n = render(rep, out)
    print("wrote %s and %s with %d figure(s)" % (os.path.join(out, "report.md"), os.path.join(out, "report.html"), n))


if __name__ == "__main__":
    main()
