"""steadyocr.doctor() is the report of `steadyocr doctor --json`."""

import steadyocr


def key(finding):
    return (finding["level"], finding["check"], finding["status"], finding["code"])


def test_doctor_matches_cli(cli_doctor):
    findings = steadyocr.doctor(level=3)
    assert isinstance(findings, list)
    assert sorted(map(key, findings)) == sorted(map(key, cli_doctor["findings"]))
    for f in findings:
        assert {"level", "layer", "check", "status", "severity", "code", "summary", "fix"} <= set(f)
    report = steadyocr.doctor_report(level=3)
    assert report["schema"] == "steadyocr-doctor" and report["requested_level"] == 3
    assert report["passed_level"] == cli_doctor["passed_level"]


def test_doctor_on_this_machine(cli_doctor):
    layer1 = cli_doctor["layers"][0]
    findings = steadyocr.doctor(level=3)
    if layer1["status"] == "fail":  # no driver here: layer 1 says so, with its fix
        no_driver = [f for f in findings if f["level"] == 1 and f["status"] == "fail"]
        assert no_driver and all(f["fix"] for f in no_driver)
        assert "L1_NO_DRIVER" in {f["code"] for f in no_driver} or no_driver[0]["code"].startswith("L1_")
        assert steadyocr.doctor_report(level=3)["ok"] is False
