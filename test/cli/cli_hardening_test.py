#!/usr/bin/python3
"""Regression tests for the CLI inputs of issue 12, each asserting the exit
status and the message: stdin closed or not a terminal, # and quotes in
paths, user errors exit 2, a script that is a directory, a 10 MB line,
control bytes, live rates against the line rate and the TX minimum,
--metrics on IPv6, and latency at_throughput_of reporting the load it used.
Issue 26: a READ's responses follow it in every stream command; the end of a
script, SIGTERM and SIGINT in a session.

usage: cli_hardening_test.py FABRICGEN SOURCE_ROOT
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import holdups  # noqa: E402

FABRICGEN, ROOT = "", ""

PLAN = """
name: hardening
ports: [{name: loop0, device: loopback}]
streams:
  - {name: udp, rate: 10 kpps, frame: {size: 128 B}}
  - {name: roce, rate: 1 Gbps, frame: {roce: {op: SEND, message: 256 B}}}
tests:
  - throughput: {name: tput, streams: [udp], search: binary, min: 1 %, max: 30 %, precision: 10 %,
                 trial_duration: 100 ms, warmup: none, tester_limit_retries: 20}
  - latency: {name: lat, streams: [udp], at_throughput_of: tput, runs: 1, trial_duration: 100 ms, warmup: none,
              tester_limit_retries: 20}
"""
# tester_limit_retries: 20 (the product's default is 5): these tests are about
# the CLI; on a VM host that steals 20-90 ms of a busy vCPU per 300 ms every
# trial's RX lcore stalls > 1 ms now and then, and 6 limited attempts in a row
# stopped the latency test (2026-12-03).


class Hardening(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="fabricgen-hardening-")
        self.addCleanup(tmp.cleanup)  # even when the test fails
        self.dir = tmp.name
        self.plan = self.write("plan.yaml", PLAN)

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        return path

    def cli(self, *args, stdin=None, close_stdin=False, timeout=60):
        """fabricgen cli ARGS; returns (exit status, stdout, stderr, max RSS in KiB of the child)."""
        p = subprocess.Popen([FABRICGEN, "cli", *args], stdin=subprocess.PIPE if stdin is not None else None,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=(lambda: os.close(0)) if close_stdin else None)
        try:
            out, err = p.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise AssertionError("fabricgen cli %s did not end within %d s" % (" ".join(args), timeout))
        return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    def script(self, text, *extra, plan=True):
        path = self.write("session.txt", text)
        rc, out, err = self.cli(*([self.plan] if plan else []), "--script", path, *extra)
        return rc, out, err, path

    # --- stdin closed or not a terminal ---------------------------------------------------------------------
    def test_stdin_closed_does_not_hang(self):
        start = time.time()
        rc, out, err = self.cli(self.plan, close_stdin=True, timeout=60)
        self.assertEqual(rc, 0, err)
        self.assertIn("loaded %s: 1 port(s), 2 stream(s), 2 test(s)" % self.plan, out)
        self.assertEqual(err, "")
        self.assertLess(time.time() - start, 30)
        # A script given by file still runs with stdin closed.
        path = self.write("s.txt", "streams\n")
        rc, out, err = self.cli(self.plan, "--script", path, close_stdin=True)
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"fabricgen> streams\n.*\nudp +loop0>loop0 +10\.000 kpps idle")

    def test_stdin_that_is_not_a_terminal_is_a_script(self):
        rc, out, err = self.cli(self.plan, stdin=b"streams\nstrat\n")
        self.assertEqual(rc, 2, out)
        self.assertIn("fabricgen> streams", out)
        self.assertEqual(err, "stdin:2: strat: unknown command 'strat' (did you mean start?); `help` lists them\n")

    # --- # and quotes ------------------------------------------------------------------------------------------
    def test_a_hash_in_a_path_is_kept_and_quotes_keep_spaces(self):
        hashed = os.path.join(self.dir, "run#2")
        spaced = os.path.join(self.dir, "my results #3")
        pcap = os.path.join(self.dir, "rx#1.pcap")
        rc, out, err, _ = self.script("# a comment line\nstart udp   # only udp\nwait 200 ms\ncapture loop0 5 %s\nstop\n"
                                      "save %s\nsave \"%s\" # a comment after a quoted word\n" % (pcap, hashed, spaced))
        self.assertEqual(rc, 0, err)
        self.assertIn("saved %s/report.json" % hashed, out)
        self.assertIn("saved %s/report.json" % spaced, out)
        self.assertIn("captured 5 frame(s) on loop0 to %s" % pcap, out)
        for d in (hashed, spaced):
            self.assertTrue(os.path.isfile(os.path.join(d, "report.json")), d)
        self.assertTrue(os.path.isfile(pcap))
        self.assertNotIn("# a comment line", out)  # comment lines are not echoed
        self.assertIn("fabricgen> start udp   # only udp", out)

    def test_escapes_in_quotes_and_an_unterminated_quote(self):
        odd = os.path.join(self.dir, 'a "q" \\ b')
        rc, out, err, _ = self.script('start\nstop\nsave "%s"\n' % odd.replace("\\", "\\\\").replace('"', '\\"'))
        self.assertEqual(rc, 0, err)
        self.assertTrue(os.path.isfile(os.path.join(odd, "report.json")))
        rc, out, err, path = self.script('save "/tmp/x\n')
        self.assertEqual(rc, 2)
        self.assertEqual(err, '%s:1: save "/tmp/x: unterminated quote (the " at column 6 has no closing ")\n' % path)

    def test_a_plan_path_with_a_hash_and_spaces_loads(self):
        plan = self.write("my plan #1.yaml", PLAN)
        rc, out, err = self.cli(plan, stdin=b"")
        self.assertEqual(rc, 0, err)
        self.assertIn("loaded %s:" % plan, out)

    # --- user errors exit 2, runtime failures 1 ---------------------------------------------------------------------
    def test_user_errors_exit_2_naming_the_line(self):
        cases = [
            ("start\nstart\n", 2, "start: start: traffic is already running (stop ends it)"),
            ("stop\n", 1, "stop: stop: no traffic is running"),
            ("rate nosuch 1 kpps\n", 1, "rate nosuch 1 kpps: no stream 'nosuch' (streams: udp, roce)"),
            ("start\ncapture loop0 1 /dev/null/x.pcap\n", 2,
             "capture loop0 1 /dev/null/x.pcap: capture: cannot write /dev/null/x.pcap: /dev/null is not a directory"),
            ("start\ncapture loop0 1 %s\n" % self.dir, 2,
             "capture: %s is there and is not a regular file (only a regular file is replaced)" % self.dir),
            ("start\nstop\nsave /dev/null/sub\n", 3, "save /dev/null/sub: save: cannot create /dev/null/sub: "),
            ("ports extra\n", 1, "ports extra: ports takes no arguments"),
            ("capture loop0 0 x.pcap\n", 1, "capture: N is 1..100000, got '0'"),
            ("run lat\n", 1, "run lat: run: lat runs at the throughput of tput: run tput first"),
        ]
        for text, line, message in cases:
            rc, out, err, path = self.script(text)
            self.assertEqual(rc, 2, (text, err))
            self.assertEqual(err.count("\n"), 1, err)
            self.assertTrue(err.startswith("%s:%d: " % (path, line)), (text, err))
            self.assertIn(message, err, text)

    def test_a_script_that_is_a_directory_is_an_error(self):
        rc, out, err = self.cli(self.plan, "--script", self.dir)
        self.assertEqual(rc, 2)
        self.assertEqual(err, "fabricgen: --script %s: is a directory; give a file of commands\n" % self.dir)
        rc, out, err = self.cli("--script", os.path.join(self.dir, "missing.txt"))
        self.assertEqual(rc, 2)
        self.assertEqual(err, "fabricgen: --script %s: No such file or directory\n" % os.path.join(self.dir, "missing.txt"))

    # --- bounded lines -----------------------------------------------------------------------------------------------
    def test_a_10_mb_line_is_refused_at_once(self):
        path = self.write("big.txt", b"help\n" + b"x" * 10_000_000 + b"\nhelp\n")
        out_path, err_path = os.path.join(self.dir, "out.txt"), os.path.join(self.dir, "err.txt")
        start = time.time()
        with open(out_path, "wb") as o, open(err_path, "wb") as e:
            p = subprocess.Popen([FABRICGEN, "cli", "--script", path], stdout=o, stderr=e)
            watchdog = threading.Timer(30, p.kill)
            watchdog.start()
            try:
                _, status, usage = os.wait4(p.pid, 0)  # this child's own peak RSS
                p.returncode = os.waitstatus_to_exitcode(status)
            finally:
                watchdog.cancel()
        took = time.time() - start
        with open(out_path) as o, open(err_path) as e:
            out, err = o.read(), e.read()
        self.assertEqual(p.returncode, 2)
        self.assertEqual(err, "%s:2: line longer than 4096 bytes\n" % path)
        self.assertEqual(out.count("fabricgen> help"), 1)  # stopped there
        self.assertLess(took, 5)  # was 20 s
        self.assertLess(usage.ru_maxrss, 100_000, "KiB")  # was ~1 GB
        # Exactly 4096 bytes is a line (here an unknown command, shown in full).
        rc, out, err, path = self.script("x" * 4096 + "\n", plan=False)
        self.assertEqual(rc, 2)
        self.assertIn("%s:1: %s: unknown command '%s'" % (path, "x" * 4096, "x" * 4096), err)

    # --- control bytes -----------------------------------------------------------------------------------------------
    def test_control_bytes_are_escaped_in_messages(self):
        rc, out, err, path = self.script("stat\x1b[2J\x07 \x9b\n", plan=False)
        self.assertEqual(rc, 2)
        self.assertEqual(err, "%s:1: stat\\x1b[2J\\x07 \\xc2\\x9b: unknown command 'stat\\x1b[2J\\x07'; "
                              "`help` lists them\n" % path)
        self.assertIn("fabricgen> stat\\x1b[2J\\x07 \\xc2\\x9b\n", out)  # the echo too
        for text in (out, err):
            self.assertFalse(re.search(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]", text), repr(text))

    # --- live rates --------------------------------------------------------------------------------------------------
    def test_rates_are_held_to_the_line_rate_and_the_tx_minimum(self):
        rc, out, err, path = self.script("rate udp 100 Gbps\n")
        self.assertEqual(rc, 2)
        self.assertEqual(err, "%s:1: rate udp 100 Gbps: rate: udp at 97.656 Mpps (115.625 Gbit/s L1) with the "
                              "port's other streams (1.063 Gbit/s L1) would need 116.688 Gbit/s L1 on port loop0, "
                              "above its line rate of 10.000 Gbit/s; lower this or another stream's rate\n" % path)
        # Live, the sum counts the other stream's rate now.
        rc, out, err, path = self.script("start\nrate roce 5 Gbps\nrate udp 6 Gbps L1\n")
        self.assertEqual(rc, 2)
        self.assertIn("%s:3: rate udp 6 Gbps L1: rate: udp at 5.068 Mpps (6.000 Gbit/s L1) with the port's other "
                      "streams (5.314 Gbit/s L1) would need 11.314 Gbit/s L1 on port loop0, above its line rate of "
                      "10.000 Gbit/s" % path, err)
        rc, out, err, path = self.script("rate udp 0.0001 pps\n")
        self.assertEqual(rc, 2)
        self.assertEqual(err, "%s:1: rate udp 0.0001 pps: rate: rate '0.0001 pps' is below the minimum of 0.001 "
                              "pps\n" % path)
        # A bit rate that comes to less: the same minimum, after conversion.
        rc, out, err, path = self.script("rate udp 0.1 bps\n")
        self.assertEqual(rc, 2)
        self.assertIn("is below the TX minimum of 0.001 pps (one frame every 1000.000 s)", err)
        # Within the line rate (udp 80 % + roce 1.063 Gbit/s L1), and max, are taken.
        rc, out, err, _ = self.script("start\nrate udp 80%\nrate udp max\nstop\n")
        self.assertEqual(rc, 0, err)
        self.assertIn("udp: 6.757 Mpps (was 10.000 kpps)", out)
        self.assertIn("udp: max (was 6.757 Mpps)", out)

    # --- issue 26: a READ's responses follow it ------------------------------------------------------------------
    READ_PLAN = """
ports: [{name: loop0, device: loopback, respond: true}]
streams:
  - {name: u, rate: 10 kpps, frame: {size: 128 B}}
  - {name: rd, rate: 50 Mbps, flows: 2, frame: {roce: {op: READ_REQUEST, message: 4 KiB, pmtu: 1024, dest_qp: 0x200}}}
"""

    def test_a_reads_responses_follow_it_in_every_stream_command(self):
        plan = self.write("read.yaml", self.READ_PLAN)
        path = self.write("read.txt", "start u\nstreams\npause all\nresume all\npause rd\nresume rd\nstop rd\nstop\n")
        rc, out, err = self.cli(plan, "--script", path)
        self.assertEqual(rc, 0, err)  # was: start u failed ("stream rd.responses: ... pause stream rd")
        self.assertRegex(out, r"started u \(")
        # The responses follow rd: paused while rd is (it was not named).
        self.assertRegex(out, r"\nrd +loop0>loop0 +[\d.]+ \w?pps +paused")
        self.assertRegex(out, r"\nrd\.responses +loop0>loop0 +[\d.]+ \w?pps +paused")
        self.assertIn("paused u, rd\n", out)  # all: the plan's streams (was: failed on rd.responses)
        self.assertIn("resumed u, rd\n", out)
        self.assertIn("paused rd\n", out)
        self.assertIn("stopped rd (the run goes on", out)
        # Naming the responses is refused by every command that acts on streams, with the one rule.
        for text, line in (("start rd.responses\n", 1), ("start\nstop rd.responses\n", 2),
                           ("start\npause rd.responses\n", 2), ("start\nresume u rd.responses\n", 2),
                           ("rate rd.responses 1 kpps\n", 1), ("rate rd.responses 1 kpps flow 0\n", 1)):
            with self.subTest(script=text):
                path = self.write("bad.txt", text)
                rc, out, err = self.cli(plan, "--script", path)
                verb = text.splitlines()[-1].split()[0]
                self.assertEqual(rc, 2, err)
                self.assertEqual(err, "%s:%d: %s: %s: stream rd.responses is the responses of READ stream rd and "
                                      "follows it (sent as its requests come); name rd\n"
                                 % (path, line, text.splitlines()[-1], verb))
        rc, out, err = self.cli(plan, stdin=b"help pause\n")
        self.assertEqual(rc, 0, err)
        self.assertIn("all: the plan's streams, a READ's responses following their READ", out)

    # --- issue 26: how a session ends --------------------------------------------------------------------------------
    SUMMARY = r"\nudp +\d+\.\d B +[\d,]+ +[\d,]+ "  # `stop`'s summary: a row per stream

    def test_the_end_of_a_script_ends_a_running_run_as_stop_does(self):
        rc, out, err = self.cli(self.plan, stdin=b"start udp\nwait 300 ms\n")
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")
        self.assertRegex(out, self.SUMMARY)  # was: exit 0, no summary
        path = self.write("s.txt", "start udp\nwait 300 ms\n")
        rc, out, err = self.cli(self.plan, "--script", path)
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, self.SUMMARY)

    def session_signalled(self, sig, script):
        """Runs `script` (it starts udp, then waits), sends `sig` in its wait; returns (exit status, stdout, stderr,
        seconds)."""
        path = self.write("long.txt", script)
        started = time.time()
        def default_signals():  # a runner under nohup ignores SIGHUP, and fabricgen keeps an ignored signal ignored
            for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
                signal.signal(s, signal.SIG_DFL)

        p = subprocess.Popen([FABRICGEN, "cli", self.plan, "--script", path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
        try:
            line = p.stdout.readline()
            while line and not line.startswith("started udp"):
                line = p.stdout.readline()
            self.assertTrue(line, "the script did not start udp")
            time.sleep(0.5)  # in the wait
            p.send_signal(sig)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        return p.returncode, out, err, time.time() - started

    def test_sigterm_ends_the_session_and_its_run(self):
        for sig in (signal.SIGTERM, signal.SIGHUP):
            with self.subTest(signal=sig.name):
                rc, out, err, took = self.session_signalled(sig, "start udp\nwait 30 s\nstreams\nwait 30 s\n")
                self.assertEqual(rc, 1, err)
                self.assertEqual(err, "fabricgen: %s: the session ended (a run going was stopped as `stop` stops "
                                      "it)\n" % sig.name)
                self.assertIn("wait: interrupted", out)
                self.assertRegex(out, self.SUMMARY)
                self.assertNotIn("fabricgen> streams", out)  # was: the script went on
                self.assertLess(took, 20)

    def test_sigint_ends_only_the_current_wait(self):
        rc, out, err, took = self.session_signalled(signal.SIGINT, "start udp\nwait 30 s\nstreams\n")
        self.assertEqual(rc, 0, err)
        self.assertIn("wait: interrupted", out)
        self.assertIn("fabricgen> streams", out)  # the script goes on
        self.assertRegex(out, self.SUMMARY)  # and its end ends the run
        self.assertLess(took, 20)

    # --- --metrics on IPv6 ------------------------------------------------------------------------------------------
    def test_metrics_on_ipv6(self):
        p = subprocess.Popen([FABRICGEN, "cli", self.plan, "--metrics", "[::1]:0", "--script", "-"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = p.stdout.readline()
            # civetweb where it has IPv6; our own listener where it has not (Debian 12's 1.15).
            m = re.match(r"metrics: (http://\[::1\]:\d+/metrics)$", first.strip())
            self.assertIsNotNone(m, first)
            for _ in range(2):  # two scrapes: the listener serves one connection after another
                with urllib.request.urlopen(m.group(1), timeout=5) as r:
                    self.assertEqual(r.status, 200)
                    self.assertIn("text/plain; version=0.0.4", r.headers["Content-Type"])
                    self.assertIn("fabricgen_run_state", r.read().decode())
            with self.assertRaises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(m.group(1).replace("/metrics", "/other"), timeout=5)
            self.assertEqual(e.exception.code, 404)
            p.stdin.close()
            self.assertEqual(p.wait(timeout=30), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        rc, out, err = self.cli("--metrics", "::1:9464", stdin=b"")
        self.assertEqual(rc, 2)
        self.assertEqual(err, "fabricgen: --metrics ::1:9464: an IPv6 address goes in brackets, then the port: "
                              "[::1]:PORT\n")

    # --- at_throughput_of -------------------------------------------------------------------------------------------
    def test_latency_at_throughput_of_reports_the_load_it_used(self):
        out_dir = os.path.join(self.dir, "out")
        r = subprocess.run([FABRICGEN, "run", self.plan, "--out", out_dir], capture_output=True, text=True,
                           timeout=120)
        if r.returncode == 1:  # a test stopped: held up by the host in every attempt is a skip (test/holdups.py)
            with open(os.path.join(out_dir, "report.json")) as f:
                holdups.skip_if_held_up(self, json.load(f), names=("tput",))
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        with open(os.path.join(out_dir, "report.json")) as f:
            tests = {t["name"]: t for t in json.load(f)["tests"]}
        goal = tests["tput"]["goals"][0]
        self.assertTrue(goal["found"])
        used = tests["lat"]["parameters"]
        self.assertNotEqual(used["load_fraction_of_line"], 0.5)  # the plan's default load, reported before
        self.assertEqual(used["load_fraction_of_line"], goal["lower_bound_fraction_of_line"])
        self.assertEqual((used["at_throughput_of"], used["load_from"], used["load_from_goal"]),
                         ("tput", "tput", goal["name"]))
        self.assertIn("  at the throughput of tput (its %s lower bound): %.3f %% of line"
                      % (goal["name"], goal["lower_bound_fraction_of_line"] * 100), r.stdout)
        self.assertIn("test lat (latency at %.3f %% of line, the %s of tput, 1 runs"
                      % (goal["lower_bound_fraction_of_line"] * 100, goal["name"]), r.stdout)


if __name__ == "__main__":
    FABRICGEN, ROOT = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
