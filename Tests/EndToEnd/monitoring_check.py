"""The shipped Grafana dashboard and alert rules against a real Prometheus (33_metrics.sh).

  monitoring_check.py wait PROMETHEUS_URL SINCE JOB   waits (polling the HTTP API, up to 60 s)
      until Prometheus' last two scrapes of JOB's target after the Unix time SINCE both succeeded,
      so that every counter the traffic before SINCE moved or created has two samples to rate;
      prints the time of the last one. (A scrape that timed out on a loaded machine is waited past.)
  monitoring_check.py check PROMETHEUS_URL DASHBOARD.json JOB TIME   runs every panel's query, and
      the template variables' label queries, through the HTTP API at TIME (one snapshot: a scrape
      failing meanwhile does not make the series stale under the queries), with Grafana's
      variables substituted ($datasource, $job, $instance as "All", $__rate_interval); prints each
      query's series count and exits 1 when one errors or returns nothing.
  monitoring_check.py rules PROMETHEUS_URL RULES.yml JOB TIME   the rules Prometheus loaded from
      RULES.yml: every alert of the file loaded and evaluated without error; and every siwa metric
      the file names (in an expression or a runbook) has a series of JOB at TIME, so that a
      renamed metric fails here rather than leaving an alert that can never fire.
"""
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def api(base, path, **params):
    url = f"{base}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:  # Prometheus answers a bad query 400 with a JSON error
        return json.load(error)
    except urllib.error.URLError as error:  # not listening yet: the wait polls again
        return {"status": "unreachable", "error": str(error.reason)}


def wait(base, since, job):
    deadline = time.monotonic() + 60
    while True:
        answer = api(base, "query", query=f'up{{job="{job}"}}[30s]')
        samples = [(float(t), v) for series in answer.get("data", {}).get("result", []) for t, v in series["values"]]
        after = [(t, v) for t, v in sorted(samples) if t > since]
        if len(after) >= 2 and after[-1][1] == "1" and after[-2][1] == "1":
            print(f"{after[-1][0]:.3f}")
            return 0
        if time.monotonic() > deadline:
            print(f"no two successful scrapes of {job} in a row after {since} within 60 s: {samples}", file=sys.stderr)
            return 1
        time.sleep(0.2)  # polling Prometheus' API for the state waited for, not a guess of the time


def substitute(expr, job):
    # Grafana's variables as a dashboard open on this job would have them: every instance ("All"
    # is the variable's allValue), and a rate window that covers the scrapes since Prometheus started.
    values = {"job": job, "instance": ".+", "__rate_interval": "1m", "__interval": "1s", "__range": "1m"}
    expr = re.sub(r"\$\{(\w+)(?::\w+)?\}", lambda m: values.get(m.group(1), m.group(0)), expr)
    expr = re.sub(r"\$(\w+)", lambda m: values.get(m.group(1), m.group(0)), expr)
    if "$" in expr:
        raise ValueError(f"a variable left in {expr}")
    return expr


def check(base, path, job, at):
    dashboard = json.load(open(path))
    failures, count = [], 0
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        # A string (every Grafana version reads it), or the object newer versions write.
        query = variable["query"] if isinstance(variable["query"], str) else variable["query"]["query"]
        query = substitute(query, job)
        match = re.fullmatch(r"label_values\((.+), *(\w+)\)", query)
        answer = api(base, f"label/{match.group(2)}/values", **{"match[]": match.group(1), "start": at - 60, "end": at})
        count += 1
        values = answer.get("data") or []
        print(f"{len(values):3d} values  ${variable['name']}: {query}")
        if answer.get("status") != "success" or not values:
            failures.append(f"variable ${variable['name']} ({query}): {answer.get('error', 'no values')}")
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    for panel in panels:
        for target in panel.get("targets", []):
            query = substitute(target["expr"], job)
            answer = api(base, "query", query=query, time=at)
            result = answer.get("data", {}).get("result", [])
            count += 1
            print(f"{len(result):3d} series  {panel['title']} [{target['refId']}]: {query}")
            if answer.get("status") != "success":
                failures.append(f"{panel['title']} [{target['refId']}]: {answer.get('error')}: {query}")
            elif not result:
                failures.append(f"{panel['title']} [{target['refId']}] returned nothing: {query}")
    return reported(failures, f"{count - len(failures)} of {count} queries of {len(panels)} panels returned data")


def rules(base, path, job, at):
    text = open(path).read()
    alerts = set(re.findall(r"^\s*- alert: (\w+)$", text, re.M))
    loaded = {
        rule["name"]: rule
        for group in api(base, "rules").get("data", {}).get("groups", [])
        for rule in group["rules"]
        if rule["type"] == "alerting"
    }
    failures = [f"{name} not loaded" for name in sorted(alerts - set(loaded))]
    for name in sorted(alerts & set(loaded)):
        rule = loaded[name]
        if rule.get("health") != "ok":
            failures.append(f"{name}: health {rule.get('health')} {rule.get('lastError', '')}")
    names = sorted(set(re.findall(r"\b(siwa_[a-z_]+)\b", text)))
    for name in names:
        result = api(base, "query", query=f'count({{__name__="{name}", job="{job}"}})', time=at).get("data", {}).get("result", [])
        if not result:
            failures.append(f"{name}: no series")
    return reported(failures, f"{len(alerts)} alerts loaded and evaluated, {len(names)} metrics they name, {len(failures)} problems")


def reported(failures, summary):
    """Prints each failure to standard error, then the summary; the exit status: 1 on a failure."""
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print(summary)
    return 1 if failures else 0


if __name__ == "__main__":
    command, base = sys.argv[1], sys.argv[2].rstrip("/")
    if command == "wait":
        sys.exit(wait(base, float(sys.argv[3]), sys.argv[4]))
    if command == "rules":
        sys.exit(rules(base, sys.argv[3], sys.argv[4], float(sys.argv[5])))
    sys.exit(check(base, sys.argv[3], sys.argv[4], float(sys.argv[5])))
