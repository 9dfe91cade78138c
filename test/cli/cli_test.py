#!/usr/bin/python3
"""End-to-end tests of the fabricgen binary on the built-in loopback.

usage: cli_test.py FABRICGEN SOURCE_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

FABRICGEN = ""
ROOT = ""


def run(*args, timeout=120):
    return subprocess.run([FABRICGEN, *args], capture_output=True, text=True, timeout=timeout)


class Workdir(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="fabricgen-cli-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path


class RunTest(Workdir):
    def test_quickstart_counts_every_frame_and_writes_report(self):
        out = os.path.join(self.dir, "out")
        r = run("run", os.path.join(ROOT, "configs/quickstart.yaml"), "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("report: " + out + "/report.json", r.stdout)
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
        self.assertEqual(os.listdir(out), ["report.json"])  # no temporary file left
        self.assertEqual(rep["schema_version"], 1)
        self.assertTrue(rep["complete"])
        streams = {s["name"]: s for s in rep["streams"]}
        # udp-64B is bounded by count; udp-1518B by the 2 s duration at 1 Gbit/s L2.
        self.assertEqual(streams["udp-64B"]["tx_packets"], 500_000)
        self.assertEqual(streams["udp-64B"]["rx_packets"], 500_000)
        self.assertEqual(streams["udp-64B"]["tx_bytes"], 32_000_000)
        big = streams["udp-1518B"]
        self.assertAlmostEqual(big["set_rate_pps"], 1e9 / (8 * 1518), places=3)
        self.assertAlmostEqual(big["tx_packets"] + big["tx_slots_skipped"], 2 * 1e9 / (8 * 1518), delta=32)
        self.assertEqual(big["rx_packets"], big["tx_packets"])
        port = rep["ports"][0]
        self.assertEqual(port["name"], "loop0")
        self.assertEqual(port["driver"], "net_ring")
        self.assertEqual(port["tx_packets"], 500_000 + big["tx_packets"])
        self.assertEqual(port["rx_packets"], port["tx_packets"])
        self.assertEqual(port["rx_unknown_packets"], 0)
        self.assertEqual(port["pmd_stats"]["rx_packets"], port["rx_packets"])
        for key in ("tx_packets", "rx_packets", "tx_bytes", "rx_bytes", "duration_ns"):
            self.assertIn(key, port)
            self.assertIn(key, streams["udp-64B"])

    def test_default_out_dir_is_under_results(self):
        plan = self.write("tiny.yaml", "streams: [{name: s, rate: 10 kpps, count: 100}]\n")
        r = subprocess.run([FABRICGEN, "run", plan], capture_output=True, text=True, cwd=self.dir, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        line = [l for l in r.stdout.splitlines() if l.startswith("report: ")][0]
        path = os.path.join(self.dir, line[len("report: "):])
        self.assertTrue(path.startswith(os.path.join(self.dir, "results/tiny-")), path)
        with open(path) as f:
            self.assertEqual(json.load(f)["streams"][0]["rx_packets"], 100)


class InputErrorTest(Workdir):
    def check(self, text, expect):
        plan = self.write("bad.yaml", text)
        out = os.path.join(self.dir, "out")
        r = run("run", plan, "--out", out)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(plan + expect, r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, "exactly one error line: " + r.stderr)
        self.assertFalse(os.path.exists(out), "nothing written for an invalid plan")

    def test_misspelt_key(self):
        self.check("streams:\n  - name: s\n    rtae: 1 kpps\n",
                   ":3:5: streams[0].rtae: unknown field 'rtae' (did you mean 'rate'?)")

    def test_negative_rate(self):
        self.check("streams:\n  - name: s\n    rate: -5 kpps\n",
                   ":3:11: streams[0].rate: rate '-5 kpps' must be greater than zero")

    def test_wrong_type(self):
        self.check("streams:\n  - {name: s, rate: 1 kpps, count: many}\n",
                   ":2:36: streams[0].count: 'many' is not an integer")

    def test_rate_above_line_rate(self):
        self.check("streams:\n  - {name: s, rate: 20 Gbps}\n", ":2: streams[0].rate: 20.000 Gbit/s (L2)")

    def test_missing_file(self):
        path = os.path.join(self.dir, "absent.yaml")
        r = run("run", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn(path + ": cannot open plan: No such file or directory", r.stderr)

    def test_unknown_command_and_option(self):
        self.assertEqual(run("frobnicate").returncode, 2)
        self.assertEqual(run("run", "x.yaml", "--bogus").returncode, 2)


class RuntimeErrorTest(Workdir):
    def test_missing_device_is_a_runtime_failure_naming_the_port(self):
        plan = self.write("dev.yaml", "ports: [{name: p0, device: '0000:ff:1f.7'}]\n"
                                      "streams: [{name: s, rate: 1 kpps, count: 1}]\n")
        r = run("run", plan)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(plan + ":1: ports[0]: port 'p0': no DPDK port named '0000:ff:1f.7'", r.stderr)


class InfoTest(unittest.TestCase):
    def test_version(self):
        r = run("version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^fabricgen \d+\.\d+\.\d+ \(DPDK 22\.11")

    def test_ports_lists_loopback_with_capabilities(self):
        r = run("ports", "--", "--vdev=net_null0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("port loop0: net_ring_fg0 (driver net_ring", r.stdout)
        self.assertIn("net_null0 (driver net_null", r.stdout)
        self.assertIn("timestamps: rx hardware no", r.stdout)


if __name__ == "__main__":
    FABRICGEN = os.path.abspath(sys.argv.pop(1))
    ROOT = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
