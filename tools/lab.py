#!/usr/bin/python3
"""fabricgen lab: a leaf/spine fabric in network namespaces, built from a plan's
`lab:` section, with impairments whose truths the kernel (or our logged
impairment stage) records independently of fabricgen's analyzer.

usage:
  lab.py up PLAN [--name NAME]         build the lab and leave it up
  lab.py down (PLAN | --name NAME)     remove a lab (namespaces, stages)
  lab.py run PLAN [--name NAME] [--truth FILE] [-- COMMAND ...]
        build, run COMMAND in the tester namespace (default: fabricgen run
        PLAN), apply scheduled link events, write the truths (per-rule nft
        counters, qdisc statistics, link counters, link-down intervals, stage
        decision logs) as JSON to FILE (default: truth.json in a new
        temporary directory, with the stage logs), and remove the lab even
        on failure
  lab.py counters [--name NAME]        per-link counters as JSON (NAME defaults
        to $FABRICGEN_LAB, which `run` sets for COMMAND)
  lab.py show PLAN                     print the lab's nodes, links and routes

The lab section and its impairments are described in docs/lab.md. Needs root.
Addresses: only 198.18.0.0/15 and 2001:db8::/32 (inner links from
198.19.128.0/17 and 2001:db8:ffff::/48).
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fglab import Lab, LabError, LabSpec, read_counters, remove  # noqa: E402
from fglab.netlink import flap  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    cmd, args = argv[1], argv[2:]
    if cmd == "_flap":
        flap(args[0])
        return 0
    opts, rest, command = {}, [], None
    i = 0
    while i < len(args):
        if args[i] == "--":
            command = args[i + 1:]
            break
        if args[i] in ("--name", "--truth"):
            if i + 1 >= len(args):
                raise LabError("%s needs a value" % args[i])
            opts[args[i]] = args[i + 1]
            i += 2
            continue
        rest.append(args[i])
        i += 1
    if cmd == "counters":
        name = opts.get("--name") or os.environ.get("FABRICGEN_LAB")
        if not name:
            raise LabError("counters: no --name and no $FABRICGEN_LAB")
        print(json.dumps(read_counters(name), indent=1, sort_keys=True))
        return 0
    if cmd == "down" and "--name" in opts:
        remove(opts["--name"])
        return 0
    if len(rest) != 1:
        raise LabError("%s needs one PLAN (see --help)" % cmd)
    spec = LabSpec.load(rest[0])
    if cmd == "show":
        print("nodes: tester, %s" % ", ".join(spec.node_names()))
        print("links: %s" % ", ".join(spec.link_names()))
        for h in spec.hosts:
            print("host %s (iface %s) on leaf%d: %s" % (h.port, h.iface, h.leaf, ", ".join(map(str, h.prefixes))))
            if spec.resolve:
                print("  leaf%d resolves it by ARP/ND from %s" % (h.leaf, ", ".join(str(g) for g, _ in h.gateways())))
        for imp in spec.impairments:
            print("impairment %d on %s: %s %s" % (imp.index, imp.link, imp.kind, imp.params))
        return 0
    if cmd == "up":
        lab = Lab(spec, opts.get("--name"))
        lab.__enter__()
        print(lab.name)
        return 0
    if cmd == "down":
        raise LabError("down needs --name NAME (the name `up` printed)")
    if cmd == "run":
        fabricgen = os.path.abspath(shutil.which("fabricgen") or os.path.join(HERE, "..", "build", "app", "fabricgen"))
        command = command or [fabricgen, "run", rest[0]]
        # The stages' binary: $FABRICGEN_IMPAIR, else the one beside that fabricgen.
        beside = os.path.join(os.path.dirname(fabricgen), "fabricgen-impair")
        if not os.environ.get("FABRICGEN_IMPAIR") and os.access(beside, os.X_OK):
            os.environ["FABRICGEN_IMPAIR"] = beside
        workdir = os.path.dirname(os.path.abspath(opts["--truth"])) if "--truth" in opts else None
        if workdir is not None:
            os.makedirs(workdir, exist_ok=True)
        with Lab(spec, opts.get("--name"), workdir) as lab:
            result, truth = lab.run(command)
            sys.stdout.write(result.stdout)
            sys.stderr.write(result.stderr)
            lab.stop_stages(truth)  # their logs complete (and their summaries read) before the truths are written
            for gap in truth["gaps"]:
                sys.stderr.write("lab %s: truth incomplete: %s\n" % (lab.name, gap))
            path = opts.get("--truth") or os.path.join(lab.workdir, "truth.json")
            with open(path, "w") as f:
                f.write(json.dumps(truth, indent=1) + "\n")
            sys.stderr.write("lab %s: truths in %s\n" % (lab.name, path))
        return result.returncode
    raise LabError("unknown command '%s' (see --help)" % cmd)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except LabError as e:
        sys.stderr.write("lab.py: %s\n" % e)
        sys.exit(2)
