#!/usr/bin/python3
"""A packet-level simulation of DCQCN (roce.md; the paper's parameters slowed
to the link, as `scale_to` does) with no host in it: exact pacing, an ideal
FIFO at the link's rate that marks CE by depth as the lab's stage does, a CNP
per marked packet at most once per QP per N, fixed path delays. The
reference the lab's DCQCN figures are read against (docs/plan-reference.md,
dcqcn_convergence): m QPs at `max` each, m more from t0, then each QP's mean
rate per second against the fair share.

usage: dcqcn_sim.py [--rate 100e6] [--kmin 5000] [--kmax 200000] [--pmax 0.01] [--cnp-interval 0.02]
                    [--m 4] [--max 50e6] [--t0 2] [--end 12] [--g 0.00390625] [--jitter 0] [--seed 1]
                    [--windows 1,2,5,10,20] [--settle 10] [--rate_ai BPS] [--rate_hai BPS] [--timer S]
                    [--byte_counter BYTES]

With --windows, instead of the per-second table: for each window length W
(s), the worst deviation from the fair share of any QP's mean rate over any
W-second window from t0 + settle on (how long an average DCQCN needs to be
fair to within a bound: with the paper's parameters here 12 % even over 20 s,
docs/plan-reference.md dcqcn_convergence).
"""
import argparse
import heapq
import random
from collections import deque

FRAME, FRAME_L2 = 1098, 1102  # bytes as the stage counts them (no FCS), and with FCS (DCQCN's L2 rates)


class Qp:
    """One reaction point, as lib/endpoint/dcqcn.cc."""

    def __init__(self, p, max_bps):
        self.p, self.max = p, max_bps
        self.rc = self.rt = max_bps
        self.alpha, self.cut = 1.0, False
        self.alpha_next = self.timer_next = 0.0
        self.timer_events = self.byte_events = 0
        self.bytes = 0
        self.bytes_next = 0

    def decay(self, now):
        if not self.cut:
            return
        while now >= self.alpha_next:
            self.alpha *= 1 - self.p.g
            self.alpha_next += self.p.K

    def on_cnp(self, now):
        self.decay(now)
        self.rt = self.rc
        self.rc = max(self.p.min_rate, self.rc * max(1 - self.alpha / 2, 0.5))
        self.cut = True
        self.timer_events = self.byte_events = 0
        self.timer_next, self.bytes_next = now + self.p.T, self.bytes + self.p.B
        self.alpha = (1 - self.p.g) * self.alpha + self.p.g
        self.alpha_next = now + self.p.K

    def increase(self, timer):
        if timer:
            self.timer_events += 1
        else:
            self.byte_events += 1
        F = self.p.F
        if max(self.timer_events, self.byte_events) < F:
            pass  # fast recovery
        elif min(self.timer_events, self.byte_events) > F:
            self.rt = min(self.max, self.rt + self.p.rate_hai)
        else:
            self.rt = min(self.max, self.rt + self.p.rate_ai)
        self.rc = min(self.max, (self.rt + self.rc) / 2)

    def advance(self, now):
        if not self.cut:
            return
        while now >= self.timer_next or self.bytes >= self.bytes_next:
            if now >= self.timer_next:
                self.timer_next += self.p.T
                self.increase(True)
            if self.bytes >= self.bytes_next:
                self.bytes_next += self.p.B
                self.increase(False)


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in (("rate", 100e6), ("kmin", 5000), ("kmax", 200000), ("pmax", 0.01), ("cnp-interval", 0.02),
                          ("m", 4), ("max", 50e6), ("t0", 2.0), ("end", 12.0), ("g", 1 / 256), ("jitter", 0.0),
                          ("seed", 1), ("windows", ""), ("settle", 10.0), ("rate_ai", 0.0), ("rate_hai", 0.0),
                          ("timer", 0.0), ("byte_counter", 10e6)):
        a.add_argument("--" + name, type=type(default), default=default)
    p = a.parse_args()
    k = p.rate / 40e9  # the paper's 40 GbE, slowed to the link
    p.K, p.T, p.B, p.F = 55e-6 / k, (p.timer or 55e-6 / k), p.byte_counter, 5
    p.rate_ai, p.rate_hai, p.min_rate = (p.rate_ai or 40e6 * k), (p.rate_hai or 400e6 * k), 1e6 * k
    random.seed(p.seed)
    n = 2 * p.m
    qps = [Qp(p, p.max) for _ in range(n)]
    events = [(0.0 if i < p.m else p.t0, 0, i) for i in range(n)]  # (time, 0 send | 1 CNP, QP)
    heapq.heapify(events)
    queue, depth = deque(), 0  # (leaves at, bytes)
    last_cnp = [-1e9] * n
    tick, next_tick = p.T / 2, p.T / 2
    samples, next_sample = [], 0.0
    while events:
        t, kind, i = heapq.heappop(events)
        if t > p.end:
            break
        while t >= next_tick:
            for q in qps:
                q.advance(next_tick)
            next_tick += tick
        while t >= next_sample:
            samples.append((next_sample, [q.rc if (j < p.m or next_sample >= p.t0) else 0 for j, q in enumerate(qps)]))
            next_sample += 0.01
        if kind == 1:
            qps[i].on_cnp(t)
            continue
        q = qps[i]
        q.bytes += FRAME_L2
        while queue and queue[0][0] <= t:
            depth -= queue.popleft()[1]
        if depth >= p.kmax:
            mark = True
        elif depth >= p.kmin:
            mark = random.random() < p.pmax * (depth - p.kmin) / (p.kmax - p.kmin)
        else:
            mark = False
        leave = max(t, queue[-1][0] if queue else t) + FRAME * 8 / p.rate
        queue.append((leave, FRAME))
        depth += FRAME
        arrive = leave + 20e-6
        if mark and arrive - last_cnp[i] >= p.cnp_interval:
            last_cnp[i] = arrive
            heapq.heappush(events, (arrive + 50e-6, 1, i))  # the CNP's way back
        gap = FRAME_L2 * 8 / q.rc
        if p.jitter:
            gap *= 1 + random.uniform(-p.jitter, p.jitter)
        heapq.heappush(events, (t + gap, 0, i))
    fair = p.rate * FRAME_L2 / FRAME / n

    def means(lo, hi):
        rows = [r for ts, r in samples if lo <= ts < hi]
        return [sum(r[j] for r in rows) / len(rows) for j in range(n)]

    if p.windows:
        for w in (float(x) for x in p.windows.split(",")):
            starts = [p.t0 + p.settle + i * w for i in range(int((p.end - p.t0 - p.settle) // w))]
            worst = max((max(abs(x / fair - 1) for x in means(s, s + w)) for s in starts), default=float("nan"))
            print("%5.1f s windows from %.1f s: worst deviation %4.1f %% (%d windows)" % (w, p.t0 + p.settle,
                                                                                    100 * worst, len(starts)))
        return
    for s in range(int(p.t0), int(p.end)):
        m = means(s, s + 1)
        print("%2d-%2d s: largest deviation %4.1f %%; QP means (Mbit/s) %s" % (
            s, s + 1, 100 * max(abs(x / fair - 1) for x in m), " ".join("%.2f" % (x / 1e6) for x in m)))


if __name__ == "__main__":
    main()
