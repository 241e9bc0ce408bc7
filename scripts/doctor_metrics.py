#!/usr/bin/python3
"""The doctor's findings as Prometheus metrics: reads a `steadyocr doctor --json` report (schema in docs/DOCTOR.md)
and writes it with the Prometheus client library (Debian's python3-prometheus-client), to a Pushgateway, to a file
for node-exporter's textfile collector, and always to stdout (the job's log).

  doctor_metrics.py REPORT.json [--push URL] [--textfile PATH] [--job NAME] [--instance NAME]
  doctor_metrics.py --run [options] -- steadyocr doctor --level 4 --models /opt/steadyocr/models

With --run it runs the doctor itself (adding --json-file), passes its table through to the log, then exports the
report and exits with the doctor's exit status (0 only when the requested level passed), so that the Kubernetes
Job fails when the GPU stack does. Exit 3: the report could not be read or the push failed (cause on stderr).

Series (one group per job and instance; a push replaces the group, so a check that stopped failing is gone):
  steadyocr_doctor_ok                        1 when the requested level passed
  steadyocr_doctor_passed_level              highest level whose layers all passed
  steadyocr_doctor_requested_level           --level
  steadyocr_doctor_exit_code                 the doctor's exit status
  steadyocr_doctor_checks{status}            checks per status: pass, warn, fail, skipped
  steadyocr_doctor_check_info{level,layer,check,status,code}   1 per check (code "" for a plain pass)
  steadyocr_doctor_elapsed_seconds           how long the doctor ran
  steadyocr_doctor_last_run_timestamp_seconds
  steadyocr_doctor_environment_info{steadyocr_version,driver_version,cuda_driver,cuda_runtime_built,cudnn_built,
      cudnn_loaded,cublas_loaded,gpu,compute_capability}   1
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

try:
    from prometheus_client import CollectorRegistry, Gauge, generate_latest, push_to_gateway, write_to_textfile
except ImportError:
    sys.exit("doctor_metrics: the Prometheus client library is missing: apt-get install python3-prometheus-client")

STATUSES = ("pass", "warn", "fail", "skipped")


def registry_from_report(report):
    """A CollectorRegistry holding the series above for one doctor report (a dict)."""
    reg = CollectorRegistry()

    def gauge(name, doc, labels=()):
        return Gauge(name, doc, labels, registry=reg)

    gauge("steadyocr_doctor_ok", "1 when the requested doctor level passed").set(1 if report.get("ok") else 0)
    gauge("steadyocr_doctor_passed_level", "Highest doctor level whose layers all passed").set(
        report.get("passed_level", 0))
    gauge("steadyocr_doctor_requested_level", "Doctor level requested (--level)").set(report.get("requested_level", 0))
    gauge("steadyocr_doctor_exit_code", "Exit status of the doctor").set(report.get("exit_code", -1))
    gauge("steadyocr_doctor_elapsed_seconds", "How long the doctor ran").set(report.get("elapsed_ms", 0) / 1000.0)
    gauge("steadyocr_doctor_last_run_timestamp_seconds", "When this report was exported").set_to_current_time()
    counts = gauge("steadyocr_doctor_checks", "Doctor checks per status", ["status"])
    for status in STATUSES:
        counts.labels(status).set(report.get("counts", {}).get(status, 0))
    info = gauge("steadyocr_doctor_check_info", "One doctor check: its status and finding code",
                 ["level", "layer", "check", "status", "code"])
    for layer in report.get("layers", []):
        for c in layer.get("checks", []):
            info.labels(str(c.get("level", layer.get("level"))), c.get("layer", layer.get("name", "")),
                        c.get("check", ""), c.get("status", ""), c.get("code") or "").set(1)
    env = report.get("environment", {})
    gpu = env.get("gpu", {})
    devices = gpu.get("devices") or []
    dev = devices[0] if devices else {}
    build = env.get("build", {})
    envinfo = gauge("steadyocr_doctor_environment_info", "What the doctor saw: driver, CUDA, cuDNN, cuBLAS, GPU",
                    ["steadyocr_version", "driver_version", "cuda_driver", "cuda_runtime_built", "cudnn_built",
                     "cudnn_loaded", "cublas_loaded", "gpu", "compute_capability"])
    envinfo.labels(env.get("steadyocr", {}).get("version", report.get("steadyocr_version", "")),
                   gpu.get("driver_version", ""), gpu.get("cuda_driver_version", ""), build.get("cuda_runtime", ""),
                   build.get("cudnn", ""), (env.get("cudnn") or {}).get("version", "") or "",
                   (env.get("cublas") or {}).get("version", "") or "", dev.get("name", ""),
                   dev.get("compute_capability", "")).set(1)
    return reg


def run_doctor(cmd):
    """Runs the doctor command with --json-file; its stdout and stderr go to ours. Returns (exit status, report)."""
    fd, path = tempfile.mkstemp(prefix="doctor-", suffix=".json")
    os.close(fd)
    try:
        rc = subprocess.call(cmd + ["--json-file", path])
        sys.stdout.flush()
        with open(path) as f:
            text = f.read()
        if not text.strip():
            raise ValueError(f"the doctor (exit {rc}) wrote no JSON report: {' '.join(cmd)}")
        return rc, json.loads(text)
    finally:
        os.unlink(path)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("report", nargs="?", help="doctor JSON report (steadyocr doctor --json / --json-file)")
    ap.add_argument("--run", action="store_true", help="run the doctor command given after --")
    ap.add_argument("--push", metavar="URL", default=os.environ.get("PUSHGATEWAY_URL", ""),
                    help="Pushgateway to push to (default: $PUSHGATEWAY_URL; none: no push)")
    ap.add_argument("--textfile", metavar="PATH", help="also write PATH for node-exporter's textfile collector")
    ap.add_argument("--job", default="steadyocr-doctor", help="job label of the pushed group")
    ap.add_argument("--instance", default=os.environ.get("NODE_NAME") or socket.gethostname(),
                    help="instance label of the pushed group (default: $NODE_NAME, else the host name)")
    if "--" in argv:
        split = argv.index("--")
        args, cmd = ap.parse_args(argv[:split]), argv[split + 1:]
    else:
        args, cmd = ap.parse_args(argv), []
    if args.run == (args.report is not None) or (args.run and not cmd):
        ap.error("give a REPORT.json, or --run -- DOCTOR COMMAND...")
    try:
        if args.run:
            rc, report = run_doctor(cmd)
        else:
            with open(args.report) as f:
                report = json.load(f)
            rc = 0
        if report.get("schema") != "steadyocr-doctor":
            raise ValueError(f"not a steadyocr doctor report (schema {report.get('schema')!r}, want 'steadyocr-doctor')")
    except (OSError, ValueError) as e:
        print(f"doctor_metrics: cannot read the doctor's report: {e}", file=sys.stderr)
        return 3
    reg = registry_from_report(report)
    sys.stdout.write(generate_latest(reg).decode())
    print(f"doctor_metrics: ok={report.get('ok')} passed_level={report.get('passed_level')} of "
          f"{report.get('requested_level')}: {report.get('verdict', '')}")
    if args.textfile:
        write_to_textfile(args.textfile, reg)
        print(f"doctor_metrics: wrote {args.textfile}")
    if args.push:
        try:
            push_to_gateway(args.push, job=args.job, registry=reg, grouping_key={"instance": args.instance})
        except OSError as e:
            print(f"doctor_metrics: push to the Pushgateway {args.push} failed: {e}; check the URL "
                  "(PUSHGATEWAY_URL) and that the Pushgateway runs", file=sys.stderr)
            return 3
        print(f"doctor_metrics: pushed to {args.push} (job={args.job}, instance={args.instance})")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
