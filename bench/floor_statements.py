"""Checks that bench/floor_db.c sends siwa's statements: each of the floor's statement texts (the
output of `floor_db statements [BATCH]`, NUL-separated) must be one that siwa prepared, as MariaDB's
general log of the benchmark stack recorded it while siwa served the requests of a floor.

    python3 bench/floor_statements.py GENERAL_LOG FLOOR_TEXTS INDEX...

INDEX: the floor's statements to look for, by their place in FLOOR_TEXTS (0-based). Prints one line
per statement, found or NOT found, and exits with status 1 when one is missing.
"""
import re
import sys

# A general log entry: "[YYMMDD HH:MM:SS]<tab><tab> ID Command<tab>Argument"; an argument of several
# lines continues on the lines that follow.
ENTRY = re.compile(r"^(?:\d{6}\s+\d{1,2}:\d\d:\d\d)?\s+\d+ ([A-Za-z]+(?: [a-z]+)?)\t(.*)$")


def prepared(path):
    texts, command, lines = set(), None, []

    def close():
        if command == "Prepare":
            texts.add("\n".join(lines).rstrip("\n"))

    # Bound values in Execute lines may be any bytes: read as Latin-1, which maps each byte to one character.
    for line in open(path, encoding="latin-1").read().split("\n"):
        match = ENTRY.match(line)
        if match:
            close()
            command, lines = match.group(1), [match.group(2)]
        elif command is not None:
            lines.append(line)
    close()
    return texts


def main(log, floor, *indexes):
    found = prepared(log)
    texts = open(floor, "rb").read().decode("utf-8").split("\0")
    missing = 0
    for index in map(int, indexes):
        text = texts[index]
        ok = text in found
        missing += not ok
        print(f"  {'found' if ok else 'NOT found'}: {' '.join(text.split())[:110]}")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
