#!/usr/bin/env python3
"""Makes an app's package that depends on SIWAKit by path, in OUT_DIR, with the documentation's
Swift snippets as one of its targets: building it compiles every snippet an app would paste.

    Tests/SIWAKitConsumer/prepare.py OUT_DIR

The snippets are the ```swift blocks of README.md, docs/*.md, the DocC catalog
(Sources/SIWAKit/SIWAKit.docc/*.md) and SIWAKit's doc comments. Each is compiled as it is written:

- A block whose lines start with `.package(` or `.product(` is the app's manifest: the package's
  dependency line (the URL and version replaced by this tree's path, every other argument, such as
  `traits: []`, kept) and its target dependency make OUT_DIR/Package.swift. The URL must be the
  project's (deploy/debian/copyright), the version the latest release's, and every such block
  the same.
- A block that starts with `import` is a whole source file.
- Any other block is the body of `func ...(client: SIWAClient) async throws` (no actor: a block that needs the main actor
  says so, as an app's code must) in a file
  that imports Foundation and SIWAKit (and FoundationNetworking, where it exists): `client` is in
  scope, everything else the block declares.

A block that needs a module of Apple's platforms (it imports one, or names one of SIWAKit's
Apple-only declarations) is compiled under `#if canImport(...)`: type-checked on a Mac, skipped
on Linux; the summary names those. `#sourceLocation` makes the compiler's errors point at the
document's line. The app target `siwakit-e2e` (Sources/siwakit-e2e) is copied beside them.
"""

import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Modules every snippet may use (the statement blocks import the first and last; the second is
# imported under `#if canImport(FoundationNetworking)`, as on Linux URLRequest needs it).
ALWAYS = {"Foundation", "FoundationNetworking", "SIWAKit"}
# SIWAKit's declarations that exist on Apple's platforms only, and the module each needs.
APPLE_ONLY_NAMES = {
    "KeychainStorage": "Security",
    "AccountObject": "Combine",
    "ASAuthorization": "AuthenticationServices",
    "UIDevice": "UIKit",
}


def documents():
    """The documents and sources whose snippets are compiled, relative to the root."""
    paths = ["README.md"]
    for folder, suffix in [("docs", ".md"), ("Sources/SIWAKit/SIWAKit.docc", ".md"), ("Sources/SIWAKit", ".swift")]:
        directory = os.path.join(ROOT, folder)
        if os.path.isdir(directory):
            paths += sorted(os.path.join(folder, name) for name in os.listdir(directory) if name.endswith(suffix))
    return paths


def blocks(path):
    """(first line number, lines) of each ```swift block; in Swift sources, of the doc comments."""
    lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
    comment = path.endswith(".swift")
    found, current, start = [], None, 0
    for number, line in enumerate(lines, 1):
        if comment:
            stripped = line.strip()
            if not stripped.startswith("///"):
                current = None
                continue
            line = stripped[3:]
            line = line[1:] if line.startswith(" ") else line
        fence = line.strip()
        if current is None and fence == "```swift":
            current, start = [], number + 1
        elif current is not None and fence == "```":
            found.append((start, current))
            current = None
        elif current is not None:
            current.append(line)
    if current is not None:
        sys.exit(f"{path}:{start - 1}: a ```swift block that is never closed")
    return found


def dedent(lines):
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents) if indents else 0
    return [line[cut:] for line in lines]


def latest_release():
    """The version of the latest release (scripts/release: CHANGELOG.md's newest, with its tag or
    the commit it names): what an app can depend on."""
    try:
        line = subprocess.run(["bash", os.path.join(ROOT, "scripts/release")],
                              check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        sys.exit(f"no latest release, which the docs' dependency line names: {error.stderr or error}")
    return line.split()[0]


def manifest_parts(path, number, lines, version):
    """The app's dependency line, checked and pointed at this tree, and its target dependency: each
    (kind, Swift) of the block, kind "package" or "product"."""
    text = " ".join(line.strip() for line in lines if not line.strip().startswith("//"))
    parts = []
    package = re.search(r'\.package\(url: "([^"]+)", from: "([^"]+)"(.*?)\),', text)
    if package:
        url, since, rest = package.groups()
        source = re.search(r"^Source: (\S+)", open(os.path.join(ROOT, "deploy/debian/copyright")).read(), re.M).group(1)
        if url != source:
            sys.exit(f"{path}:{number}: the package's URL is {source} (deploy/debian/copyright), not {url}")
        if since != version:
            sys.exit(f'{path}:{number}: from: "{since}", but the latest release is {version} (its tag v{version})')
        parts.append(("package", f'.package(name: "{url.rstrip("/").split("/")[-1]}", path: "{ROOT}"{rest})'))
    product = re.search(r'\.product\(name: "SIWAKit", package: "([^"]+)"\)', text)
    if product:
        parts.append(("product", product.group(0)))
    if not parts:
        sys.exit(f'{path}:{number}: a manifest block needs .package(url:from:...) or .product(name: "SIWAKit", ...)')
    return parts


def needs(lines):
    """The modules a block needs besides the ones every snippet has."""
    modules = {m for m in (re.match(r"\s*import\s+(\w+)", line) for line in lines) if m for m in [m.group(1)]}
    text = "\n".join(lines)
    modules |= {module for name, module in APPLE_ONLY_NAMES.items() if re.search(r"\b" + name, text)}
    return sorted(modules - ALWAYS)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    version = latest_release()
    snippets_dir = os.path.join(out, "Sources", "Snippets")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(snippets_dir)
    shutil.copytree(os.path.join(HERE, "Sources", "siwakit-e2e"), os.path.join(out, "Sources", "siwakit-e2e"))

    manifest = {}  # kind: (Swift, where)
    compiled, apple_only = 0, []
    for path in documents():
        for number, lines in blocks(path):
            lines = dedent(lines)
            where = f"{path}:{number}"
            if any(line.lstrip().startswith((".package(", ".product(")) for line in lines):
                for kind, swift in manifest_parts(path, number, lines, version):
                    if kind in manifest and manifest[kind][0] != swift:
                        sys.exit(f"{where}: this .{kind} line differs from the one of {manifest[kind][1]}")
                    manifest.setdefault(kind, (swift, where))
                continue
            modules = needs(lines)
            first = next((line for line in lines if line.strip() and not line.strip().startswith("//")), "")
            is_file = first.startswith("import ")
            name = re.sub(r"[^A-Za-z0-9]", "_", path) + f"_{number}"
            source = [f'#sourceLocation(file: "{os.path.join(ROOT, path)}", line: {number})', *lines, "#sourceLocation()"]
            if not is_file:
                source = [
                    "import Foundation",
                    "import SIWAKit",
                    "#if canImport(FoundationNetworking)",
                    "    import FoundationNetworking  // URLRequest and URLSession, on Linux",
                    "#endif",
                    "",
                    f"func snippet_{name}(client: SIWAClient) async throws {{",
                    *source,
                    "}",
                ]
            if modules:
                source = ["#if " + " && ".join(f"canImport({m})" for m in modules), *source, "#endif"]
                apple_only.append(f"{where} ({', '.join(modules)})")
            compiled += 1
            with open(os.path.join(snippets_dir, f"{name}.swift"), "w") as file:
                file.write(f"// From {where}; written by Tests/SIWAKitConsumer/prepare.py.\n" + "\n".join(source) + "\n")
    if set(manifest) != {"package", "product"}:
        sys.exit("the docs need the app's manifest lines: .package(url:from:...) and .product(name: \"SIWAKit\", ...)")
    dependency = (manifest["package"][0], manifest["product"][0], manifest["package"][1])

    with open(os.path.join(out, "Package.swift"), "w") as file:
        file.write(f"""// swift-tools-version:6.1
// An app's package, as the documentation tells one to write it ({dependency[2]}), with this tree in
// place of the URL: the documentation's snippets, and the end-to-end checks' app.
import PackageDescription

let package = Package(
    name: "SIWAKitConsumer",
    platforms: [.iOS(.v15), .macOS(.v12)],
    dependencies: [{dependency[0]}],
    targets: [
        // A warning in a snippet is an error, as in the project's own code.
        .target(name: "Snippets", dependencies: [{dependency[1]}], swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]),
        .executableTarget(
            name: "siwakit-e2e", dependencies: [{dependency[1]}], swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]),
    ],
    swiftLanguageModes: [.v6]
)
""")
    print(f"{compiled} snippets from {len(documents())} documents; {len(apple_only)} of them need Apple's platforms "
          f"and are only type-checked there: {'; '.join(apple_only) or 'none'}", file=sys.stderr)


main()
