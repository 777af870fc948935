"""The examples of docs/openapi.yaml against real answers of the running stack (42_openapi.sh).

Each example of a response is compared with a real answer of the same operation and status, got now
through nginx with a real sign-in at the Apple ID emulator: the same members, recursively, with
values of the same JSON types (and the same `error` code for errors). The request example of a sync
must be accepted. With --print, the real answers are printed instead, for copying into the document.
"""

import json
import sys
import urllib.error
import urllib.request

import yaml

from schemathesis_hooks import BASE, TLS, sign_in_body

DOCUMENT = yaml.safe_load(open(sys.argv[1]))


def call(method, path, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, context=TLS, timeout=10) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    return status, json.loads(text) if text else None


def resolve(node):
    while isinstance(node, dict) and "$ref" in node:
        target = DOCUMENT
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def example(path, method, status):
    response = resolve(DOCUMENT["paths"][path][method]["responses"][str(status)])
    return response["content"]["application/json"].get("example")


def shape(value):
    if isinstance(value, dict):
        return {key: shape(member) for key, member in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def real_answers():
    """(path, method, status) -> a real answer, from one person's session."""
    answers = {}
    answers["/health", "get", 200] = call("GET", "/health")[1]
    first_sign_in = dict(sign_in_body(), fullName={"givenName": "Jane", "familyName": "Appleseed"}, device="Jane's iPhone")
    status, grant = call("POST", "/auth/apple", first_sign_in)
    assert status == 200, grant
    answers["/auth/apple", "post", 200] = grant
    token = grant["accessToken"]
    sync_example = DOCUMENT["paths"]["/sync"]["post"]["requestBody"]["content"]["application/json"]["example"]
    status, synced = call("POST", "/sync", sync_example, token)
    assert status == 200, f"the request example of /sync was refused: {status} {synced}"
    answers["/sync", "post", 200] = synced
    answers["/auth/me", "get", 200] = call("GET", "/auth/me", token=token)[1]
    answers["/auth/sessions", "get", 200] = call("GET", "/auth/sessions", token=token)[1]
    status, renewed = call("POST", "/auth/refresh", {"refreshToken": grant["refreshToken"]})
    assert status == 200, renewed
    answers["/auth/refresh", "post", 200] = renewed
    bad = dict(sync_example, progress=[dict(sync_example["progress"][0], status="finished")])
    answers["/sync", "post", 400] = call("POST", "/sync", bad, renewed["accessToken"])[1]
    call("POST", "/auth/logout", token=renewed["accessToken"])
    answers["/auth/me", "get", 401] = call("GET", "/auth/me", token=renewed["accessToken"])[1]
    return answers


answers = real_answers()
if "--print" in sys.argv:
    for (path, method, status), answer in answers.items():
        print(f"{method.upper()} {path} {status}: {json.dumps(answer)}")
    sys.exit(0)

compared, failures = 0, []
for (path, method, status), answer in answers.items():
    documented = example(path, method, status)
    if documented is None:
        failures.append(f"{method.upper()} {path} {status} has no example")
        continue
    compared += 1
    if shape(documented) != shape(answer):
        failures.append(f"{method.upper()} {path} {status}: the example {json.dumps(documented)} is not shaped like the real answer {json.dumps(answer)}")
    elif "error" in answer and documented["error"] != answer["error"]:
        failures.append(f"{method.upper()} {path} {status}: the example's error {documented['error']} is not the real {answer['error']}")
for failure in failures:
    print("FAIL:", failure, file=sys.stderr)
if failures:
    sys.exit(1)
print(f"{compared} response examples shaped like the real answers; the request example of /sync accepted")
