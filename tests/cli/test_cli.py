#!/usr/bin/env python3
"""test_cli.py VFGX - one command-line convention for every subcommand: walks
every command and benchmark `vfgx completion list` names (the option tables
getopt_long reads) and checks -h/--help (exit 0, usage on stdout, every
option listed with its short and long form), an unknown option and a
missing value (one line on stderr, exit 2), --version, and that the
generated bash completion parses and completes from the same tables."""
import re
import subprocess
import sys

VFGX = sys.argv[1]
failures = []


def run(*args, **kw):
    return subprocess.run([VFGX, *args], capture_output=True, text=True, timeout=60, **kw)


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg)
        failures.append(msg)


def one_line_error(r, what):
    lines = r.stderr.strip("\n").split("\n") if r.stderr.strip() else []
    check(r.returncode == 2, "%s: exit %d, wanted 2" % (what, r.returncode))
    check(len(lines) == 1, "%s: %d lines on stderr, wanted 1: %r" % (what, len(lines), r.stderr))
    check(r.stdout == "", "%s: printed on stdout: %r" % (what, r.stdout[:200]))


r = run("--version")
check(r.returncode == 0 and re.fullmatch(r"vfgx \d+\.\d+\.\d+\S*\n", r.stdout),
      "--version: rc %d %r" % (r.returncode, r.stdout))
check(run("-V").stdout == r.stdout, "-V differs from --version")
for h in ("-h", "--help"):
    r = run(h)
    check(r.returncode == 0 and r.stdout.startswith("usage: vfgx") and not r.stderr,
          "vfgx %s: rc %d" % (h, r.returncode))
one_line_error(run("--no-such-option"), "vfgx --no-such-option")
one_line_error(run("no-such-command"), "vfgx no-such-command")
check(run().returncode == 2, "vfgx without a command: exit not 2")

listing = run("completion", "list")
check(listing.returncode == 0, "completion list: rc %d" % listing.returncode)
commands = {}
for line in listing.stdout.splitlines():
    words = line.split()
    name = [w for w in words if not w.startswith("--")]
    commands[" ".join(name)] = [w[2:] for w in words if w.startswith("--")]
top = set(re.findall(r"^  (\S+) ", run("--help").stdout, re.M))
for want in ("run", "bench", "discover", "devices", "doctor", "mon", "completion",
             "bench pipeline", "bench socket", "bench gpu", "bench afxdp", "bench eba"):
    check(want in commands, "completion list lacks '%s'" % want)
check(top == {c for c in commands if " " not in c},
      "vfgx --help lists %s, the tables %s" % (sorted(top), sorted(commands)))

for cmd, opts in sorted(commands.items()):
    argv = cmd.split()
    check("help" in opts, "%s: no --help option" % cmd)
    for h in ("--help", "-h"):
        r = run(*argv, h)
        check(r.returncode == 0, "vfgx %s %s: exit %d, stderr %r" % (cmd, h, r.returncode, r.stderr[-300:]))
        check("usage: vfgx " + cmd in r.stdout, "vfgx %s %s: no usage line on stdout" % (cmd, h))
        check(r.stderr == "", "vfgx %s %s: wrote to stderr: %r" % (cmd, h, r.stderr[-300:]))
    helptext = run(*argv, "--help").stdout
    check(helptext.count("usage:") == 1, "vfgx %s --help: %d 'usage:' lines, wanted 1"
          % (cmd, helptext.count("usage:")))
    for o in opts:
        m = re.search(r"^\s+-(\S), --%s\b" % re.escape(o), helptext, re.M)
        check(m is not None, "vfgx %s --help: option --%s has no '-x, --%s' line" % (cmd, o, o))
    one_line_error(run(*argv, "--no-such-option"), "vfgx %s --no-such-option" % cmd)
    # a value-taking option given last has no value
    valued = re.findall(r"^\s+-\S, --(\S+) [A-Z]", helptext, re.M)
    if valued:
        one_line_error(run(*argv, "--" + valued[0]), "vfgx %s --%s without its value" % (cmd, valued[0]))
    if cmd != "bench":
        check(len(opts) >= 1, "%s: empty option table" % cmd)

# bench: every benchmark is in the table and no unknown one is accepted
one_line_error(run("bench", "no-such-bench"), "vfgx bench no-such-bench")
one_line_error(run("bench"), "vfgx bench without a name")

# the generated bash completion parses and completes from the tables
script = run("completion", "bash").stdout
r = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
check(r.returncode == 0, "completion bash does not parse: %s" % r.stderr)


def complete(words):
    prog = script + "\nCOMP_WORDS=(%s); COMP_CWORD=%d; _vfgx; printf '%%s\\n' \"${COMPREPLY[@]}\"\n" % (
        " ".join("'%s'" % w for w in words), len(words) - 1)
    r = subprocess.run(["bash", "-c", prog], text=True, capture_output=True)
    return set(r.stdout.split())


check(complete(["vfgx", "ru"]) == {"run"}, "completion of 'vfgx ru': %s" % complete(["vfgx", "ru"]))
check({"--metrics", "--metrics-hold"} <= complete(["vfgx", "run", "--metr"]),
      "completion of 'vfgx run --metr': %s" % complete(["vfgx", "run", "--metr"]))
check(complete(["vfgx", "bench", "pip"]) == {"pipeline"}, "completion of 'vfgx bench pip'")
check("--metrics-overhead" in complete(["vfgx", "bench", "pipeline", "--m"]),
      "completion of 'vfgx bench pipeline --m'")
for cmd, opts in commands.items():
    if " " in cmd or cmd == "bench":
        continue
    got = complete(["vfgx", cmd, "--"])
    check(got == {"--" + o for o in opts}, "completion of 'vfgx %s --': %s, table %s" % (cmd, sorted(got), opts))

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("test_cli: %d commands and benchmarks follow one convention" % len(commands))
