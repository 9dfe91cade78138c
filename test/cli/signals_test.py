#!/usr/bin/python3
"""Issue 26: how `fabricgen run` ends. Every signal that would end the process
(SIGHUP, SIGUSR1, SIGTERM, ..., a second SIGINT) stops the run and its report
is still written, marked incomplete (complete: false, interrupted: true), and
EAL's runtime directory is removed; a signal during the set-up (before
traffic) does the same, promptly; SIGPIPE is ignored, so a reader that goes
away (`fabricgen run plan 2>&1 | head -2`) changes nothing but the lines it
missed. Each test asserts the exit status and the report's fields.

usage: signals_test.py FABRICGEN SOURCE_ROOT
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

FABRICGEN = ""
ROOT = ""

# 60 s of traffic unless a signal ends it.
LONG = "streams: [{name: s, rate: 20 kpps, duration: 60 s}]\n"


def runtime_dirs(pid):
    """EAL's runtime directories of process `pid` (its --file-prefix is fabricgen-PID) that are still there."""
    bases = ["/var/run/dpdk", "/run/dpdk", "/tmp/dpdk"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        bases.append(os.path.join(os.environ["XDG_RUNTIME_DIR"], "dpdk"))
    return [d for d in (os.path.join(b, "fabricgen-%d" % pid) for b in bases) if os.path.exists(d)]


def default_signals():
    """In the child before exec: the signals these tests send at their default disposition (a runner under nohup
    ignores SIGHUP, and fabricgen rightly keeps an ignored signal ignored)."""
    for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


class Workdir(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="fabricgen-signals-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.out = os.path.join(self.dir, "out")

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def start(self, plan):
        p = subprocess.Popen([FABRICGEN, "run", plan, "--out", self.out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.communicate()))
        return p

    def wait_for_traffic(self, p):
        """Reads stdout up to the placement line ("lcore 1: tx loop0/q0, ..."), printed just before traffic starts."""
        line = p.stdout.readline()
        while line and not line.startswith("lcore "):
            line = p.stdout.readline()
        self.assertTrue(line, "the run ended before its traffic started")

    def finish(self, p, timeout=30):
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err

    def report(self):
        self.assertEqual(os.listdir(self.out), ["report.json"])  # the report, and no temporary file
        with open(os.path.join(self.out, "report.json")) as f:
            return json.load(f)

    def assert_incomplete_report(self, rc, out, err):
        self.assertEqual(rc, 1, err)
        self.assertIn("report: %s/report.json" % self.out, out)
        rep = self.report()
        self.assertFalse(rep["complete"])
        self.assertTrue(rep["interrupted"])
        return rep


class RunSignals(Workdir):
    def test_every_ending_signal_writes_the_report_marked_incomplete(self):
        plan = self.write("long.yaml", LONG)
        for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                if os.path.exists(self.out):
                    for f in os.listdir(self.out):
                        os.unlink(os.path.join(self.out, f))
                    os.rmdir(self.out)
                p = self.start(plan)
                self.wait_for_traffic(p)
                time.sleep(0.3)
                p.send_signal(sig)
                rc, out, err = self.finish(p)
                rep = self.assert_incomplete_report(rc, out, err)  # was: killed, no report, an empty directory
                st = rep["streams"][0]
                self.assertGreater(st["tx_packets"], 0)
                self.assertLess(st["tx_packets"], 20_000 * 30)
                self.assertEqual(st["rx_packets"], st["tx_packets"])
                self.assertEqual(runtime_dirs(p.pid), [])  # EAL's runtime directory removed on the way out

    def test_a_second_sigint_does_not_kill_the_run_without_its_report(self):
        # A 1 s drain: the second and third Ctrl-C land while the first one's run drains.
        plan = self.write("drain.yaml", "drain: 1 s\n" + LONG)
        p = self.start(plan)
        self.wait_for_traffic(p)
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        time.sleep(0.1)
        p.send_signal(signal.SIGINT)
        rc, out, err = self.finish(p)
        rep = self.assert_incomplete_report(rc, out, err)  # was: killed by the second (exit -2), nothing written
        self.assertEqual(rep["streams"][0]["rx_packets"], rep["streams"][0]["tx_packets"])
        self.assertEqual(runtime_dirs(p.pid), [])

    def test_sigpipe_is_ignored(self):
        plan = self.write("count.yaml", "duration: 10 s\nstreams: [{name: s, rate: 20 kpps, count: 30000}]\n")
        p = self.start(plan)
        self.wait_for_traffic(p)
        p.send_signal(signal.SIGPIPE)
        rc, out, err = self.finish(p)
        self.assertEqual(rc, 0, err)  # was: killed by it (exit -13), nothing written
        rep = self.report()
        self.assertTrue(rep["complete"])
        self.assertFalse(rep["interrupted"])
        self.assertEqual(rep["streams"][0]["tx_packets"], 30_000)


class ClosedPipes(Workdir):
    # 2.5 s (the count ends it; duration only bounds it): progress lines at 1 s and 2 s
    PLAN = "duration: 10 s\nstreams: [{name: s, rate: 20 kpps, count: 50000}]\n"

    def test_a_reader_that_goes_away_ends_neither_the_run_nor_its_report(self):
        plan = self.write("count.yaml", self.PLAN)
        r = subprocess.run(["/bin/bash", "-c", '"$0" run "$1" --out "$2" 2>&1 | head -2; exit "${PIPESTATUS[0]}"',
                            FABRICGEN, plan, self.out], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)  # was 141: killed by SIGPIPE at the first progress line
        self.assertEqual(len(r.stdout.splitlines()), 2, r.stdout)
        rep = self.report()
        self.assertTrue(rep["complete"])
        self.assertEqual(rep["streams"][0]["tx_packets"], 50_000)
        self.assertEqual(rep["streams"][0]["rx_packets"], 50_000)

    def test_stdout_and_stderr_closed_at_once(self):
        plan = self.write("count.yaml", self.PLAN)
        p = subprocess.Popen([FABRICGEN, "run", plan, "--out", self.out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        p.stdout.close()
        p.stderr.close()
        self.assertEqual(p.wait(timeout=60), 0)
        rep = self.report()
        self.assertTrue(rep["complete"])
        self.assertEqual(rep["streams"][0]["tx_packets"], 50_000)


class SetupInterrupted(Workdir):
    def test_a_signal_before_traffic_ends_the_run_with_its_report(self):
        """The output directory is made once the handlers are in place, before EAL starts: the process is frozen
        there, given SIGTERM and let go, so the signal is taken during the set-up, before any traffic."""
        plan = self.write("long.yaml", LONG)
        started = time.time()
        p = self.start(plan)
        deadline = time.time() + 30
        while not os.path.isdir(self.out) and p.poll() is None and time.time() < deadline:
            time.sleep(0.001)
        self.assertIsNone(p.poll(), "the run ended before its output directory was made")
        p.send_signal(signal.SIGSTOP)
        p.send_signal(signal.SIGTERM)
        p.send_signal(signal.SIGCONT)
        rc, out, err = self.finish(p)
        self.assertLess(time.time() - started, 20)  # promptly: the plan's traffic would take 60 s
        rep = self.assert_incomplete_report(rc, out, err)  # never an empty directory
        self.assertRegex(out, r"interrupted while [a-zA-Z ]+: no traffic was sent\n")
        self.assertNotRegex(out, r"(?m)^lcore \d+: ")  # no placement line: traffic never started
        self.assertEqual(rep["streams"], [])
        self.assertTrue(any("no traffic was sent" in w for w in rep["warnings"]), rep["warnings"])
        self.assertEqual(runtime_dirs(p.pid), [])


if __name__ == "__main__":
    FABRICGEN = os.path.abspath(sys.argv.pop(1))
    ROOT = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
