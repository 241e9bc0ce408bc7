#!/usr/bin/python3
"""ctest Deploy.DoctorMetricsAndCompatRow: scripts/doctor_metrics.py (the daily CronJob's step) and
scripts/compat_row.py (docs/COMPATIBILITY.md) on a real doctor report of this machine.

  check_doctor_tools.py STEADYOCR_BIN

The doctor runs here as it is (no GPU on CI: layer 1 fails, which is a real report too); every exported value is
compared with the doctor's own JSON report: ok, levels, exit status, the count per status, every check with its
status and code, the versions; the push goes to a local recording server standing in for a Pushgateway (the
Pushgateway API: PUT /metrics/job/JOB/instance/INSTANCE with the exposition as the body).
"""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
METRICS = os.path.join(REPO, "scripts", "doctor_metrics.py")
COMPAT = os.path.join(REPO, "scripts", "compat_row.py")
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("FAIL: the Prometheus client library is missing: apt-get install python3-prometheus-client "
             "(scripts/debian-packages.txt)")

failures = []


def check(cond, message):
    if not cond:
        failures.append(message)
        print("FAIL: " + message)


def families(text):
    """{(name, frozenset(labels)): value} of an exposition text, read by the client library's parser."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


class Recorder(http.server.BaseHTTPRequestHandler):
    requests = []

    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Recorder.requests.append((self.command, self.path, self.headers.get("Content-Type", ""), body.decode()))
        self.send_response(200)
        self.end_headers()

    do_POST = do_PUT

    def log_message(self, *args):
        pass


def main(argv):
    if len(argv) != 1:
        sys.exit("usage: check_doctor_tools.py STEADYOCR_BIN")
    binary = argv[0]
    doctor = [binary, "doctor", "--level", "2", "--keep-going"]
    direct = subprocess.run(doctor + ["--json"], capture_output=True, text=True)
    report = json.loads(direct.stdout)
    print(f"doctor here: exit {direct.returncode}, ok={report['ok']}, passed level {report['passed_level']} of 2, "
          f"counts {report['counts']}")

    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        textfile = os.path.join(tmp, "steadyocr_doctor.prom")
        run = subprocess.run([METRICS, "--run", "--textfile", textfile, "--push", url, "--instance", "node-a", "--"]
                             + doctor, capture_output=True, text=True)
        server.shutdown()
        check(run.returncode == direct.returncode,
              f"doctor_metrics.py exits {run.returncode}, the doctor {direct.returncode}: the Job must fail with it")
        check("LAYER" in run.stdout and "Verdict:" in run.stdout, "the doctor's table is in the log (stdout)")
        check("# TYPE steadyocr_doctor_ok gauge" in run.stdout, "the exposition is in the log too")
        with open(textfile) as f:
            text = f.read()
    got = families(text)
    value = lambda name, **labels: got.get((name, frozenset(labels.items())))
    check(value("steadyocr_doctor_ok") == (1.0 if report["ok"] else 0.0), f"steadyocr_doctor_ok {value('steadyocr_doctor_ok')}")
    check(value("steadyocr_doctor_passed_level") == report["passed_level"], "steadyocr_doctor_passed_level")
    check(value("steadyocr_doctor_requested_level") == 2, "steadyocr_doctor_requested_level 2")
    check(value("steadyocr_doctor_exit_code") == direct.returncode, "steadyocr_doctor_exit_code")
    for status in ("pass", "warn", "fail", "skipped"):
        check(value("steadyocr_doctor_checks", status=status) == report["counts"].get(status, 0),
              f"steadyocr_doctor_checks{{status={status}}} {value('steadyocr_doctor_checks', status=status)} "
              f"!= {report['counts'].get(status, 0)}")
    want = {(str(c["level"]), c["layer"], c["check"], c["status"], c["code"] or "")
            for layer in report["layers"] for c in layer["checks"]}
    have = {(dict(k[1])["level"], dict(k[1])["layer"], dict(k[1])["check"], dict(k[1])["status"], dict(k[1])["code"])
            for k, v in got.items() if k[0] == "steadyocr_doctor_check_info" and v == 1.0}
    check(have == want, f"check_info differs from the report's checks: missing {sorted(want - have)}, extra {sorted(have - want)}")
    env = [dict(k[1]) for k in got if k[0] == "steadyocr_doctor_environment_info"]
    build = report["environment"].get("build", {})
    check(len(env) == 1 and env[0]["cudnn_built"] == build.get("cudnn", "") and
          env[0]["cuda_runtime_built"] == build.get("cuda_runtime", "") and
          env[0]["steadyocr_version"] == report["environment"]["steadyocr"]["version"],
          f"environment_info {env} against the report's build {build}")
    print(f"doctor_metrics: {len(got)} samples, {len(have)} checks, all equal to the report")

    check(len(Recorder.requests) == 1, f"one push to the gateway ({len(Recorder.requests)})")
    if Recorder.requests:
        method, path, ctype, body = Recorder.requests[0]
        check(method == "PUT" and path == "/metrics/job/steadyocr-doctor/instance/node-a",
              f"the push is PUT /metrics/job/steadyocr-doctor/instance/node-a (was {method} {path})")
        check(ctype.startswith("text/plain"), f"pushed as the text exposition ({ctype})")
        pushed = families(body)
        strip = lambda d: {k: v for k, v in d.items() if k[0] != "steadyocr_doctor_last_run_timestamp_seconds"}
        check(strip(pushed) == strip(got), "the pushed series are the textfile's")
        print(f"push: {method} {path}, {len(pushed)} samples")

    bad = subprocess.run([METRICS, os.path.join(REPO, "tests", "deploy", "package.json")], capture_output=True, text=True)
    check(bad.returncode == 3 and "not a steadyocr doctor report" in bad.stderr,
          f"a file that is no doctor report: exit 3 with the reason (exit {bad.returncode}: {bad.stderr.strip()})")

    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(report, f)
        f.flush()
        row = subprocess.run([COMPAT, f.name, "--source", "test"], capture_output=True, text=True)
    check(row.returncode == 0, f"compat_row.py exit {row.returncode}: {row.stderr}")
    cells = [c.strip() for c in row.stdout.strip().strip("|").split(" | ")]
    check(len(cells) == 9, f"a row of 9 cells: {row.stdout}")
    if len(cells) == 9:
        cudnn = report["environment"].get("cudnn", {})
        check(cells[3].startswith(cudnn["version"] if cudnn.get("loaded") else "not loaded") and
              cells[3].endswith(f"({build.get('cudnn')})"), f"cuDNN cell {cells[3]!r}")
        check(cells[2].startswith(build.get("cuda_runtime", "?")), f"CUDA runtime cell {cells[2]!r}")
        check(cells[6].startswith("PASS" if report["ok"] else "FAIL") and
              f"level {report['passed_level']} of 2" in cells[6], f"result cell {cells[6]!r}")
        for c in report["findings"]:
            if c["status"] in ("warn", "fail") and c["code"]:
                check(c["code"] in cells[6], f"{c['code']} in the result cell")
        check(cells[8] == "test", "the source cell")
        print(f"compat_row: {row.stdout.strip()}")
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
