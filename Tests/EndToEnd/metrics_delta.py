"""Compares two scrapes of GET /metrics (Prometheus text format).

    metrics_delta.py BEFORE AFTER SERIES=DELTA...   every series changed by exactly DELTA
    metrics_delta.py value FILE SERIES              prints one series' value

A series is written as in the exposition, labels in the order siwa gives them, for example
'siwa_sign_ins_total{flow="native",result="success"}'; a series missing from a scrape is 0.
"""
import sys


def parse(path):
    values = {}
    with open(path) as scrape:
        for line in scrape:
            if line.startswith("#") or not line.strip():
                continue
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


if sys.argv[1] == "value":
    print(parse(sys.argv[2]).get(sys.argv[3], 0.0))
    sys.exit(0)

before, after = parse(sys.argv[1]), parse(sys.argv[2])
failures = []
for expectation in sys.argv[3:]:
    series, delta = expectation.rsplit("=", 1)
    got = after.get(series, 0.0) - before.get(series, 0.0)
    if abs(got - float(delta)) > 1e-9:
        failures.append(f"{series}: expected +{delta}, got +{got:g}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
