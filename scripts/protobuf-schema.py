#!/usr/bin/env python3
"""Writes the protobuf schema `kubesched run` decodes the API server's protobuf with.

The schema is read off the Go types of k8s.io/api and k8s.io/apimachinery: each
struct field's `protobuf:"..."` tag gives its field number, wire type and repetition;
its `json:"..."` tag gives the name the k8s-openapi types know it by and whether an
empty value is left out; its Go type gives the message or map it holds and whether it
is a pointer. Pointer-ness and omitempty are what let a decoder give the same object
as the JSON: gogo-protobuf writes a non-pointer field even when it is empty, where the
JSON encoder leaves it out under omitempty (`nodeName: ""` is no nodeName), while an
empty value behind a pointer (`storageClassName: ""`) is kept in both.

Usage: protobuf-schema.py API_GIT_DIR APIMACHINERY_GIT_DIR [REF] > schema.txt
(bare or not; REF defaults to HEAD). Output format, one block per message:

    message <package>.<Type>
    <number> <jsonName> <flags> <type>

flags: `r` repeated, `z` keep an empty value, `i` inline (an embedded struct whose
fields are the parent's in JSON), `-` none; type: string, bool, int, uint, double, float, bytes,
`map:<key>:<value>`, or a message name.
"""

import re
import subprocess
import sys

API_PACKAGES = [
    "core/v1", "apps/v1", "policy/v1", "storage/v1", "resource/v1",
    "coordination/v1", "events/v1",
]
MACHINERY_PACKAGES = [
    "pkg/apis/meta/v1", "pkg/runtime", "pkg/api/resource", "pkg/util/intstr",
    "pkg/types",
]
# Messages whose JSON is not their fields: the decoder knows each by name.
SPECIAL = {"meta.v1.Time", "meta.v1.MicroTime", "meta.v1.Duration",
           "resource.Quantity", "intstr.IntOrString", "runtime.RawExtension",
           "meta.v1.FieldsV1"}


def git(repo, *args):
    return subprocess.run(["git", "--git-dir", repo, *args], check=True,
                          capture_output=True, text=True).stdout


def short(path):
    """k8s.io/api/core/v1 -> core.v1; k8s.io/apimachinery/pkg/apis/meta/v1 -> meta.v1"""
    parts = path.split("/")
    if "apis" in parts:
        parts = parts[parts.index("apis") + 1:]
    elif parts[:2] == ["k8s.io", "api"]:
        parts = parts[2:]
    else:
        parts = parts[-1:]
    return ".".join(parts)


def package_files(repo, ref, pkg):
    names = git(repo, "ls-tree", "--name-only", f"{ref}:{pkg}").split()
    for n in names:
        if n.endswith(".go") and not n.endswith("_test.go") and not n.startswith("zz_") \
                and not n.endswith(".pb.go"):
            yield git(repo, "show", f"{ref}:{pkg}/{n}")


FIELD = re.compile(r'^\s+(?:(\w+)\s+)?([\w.*\[\]]+(?:\[[\w.]+\][\w.*\[\]]+)?)\s+`(.*)`\s*$')
TYPE_DECL = re.compile(r'^type\s+(\w+)\s+(\S+)\s*$')


class Package:
    def __init__(self, name):
        self.name = name          # short name, e.g. core.v1
        self.imports = {}         # alias -> short name
        self.named = {}           # named non-struct type -> Go type
        self.structs = {}         # struct -> [(number, json, flags, gotype, wire)]


def parse(pkg_short, sources):
    p = Package(pkg_short)
    for src in sources:
        for m in re.finditer(r'^\s*(\w+\s+)?"([\w./-]+)"\s*$', src, re.M):
            alias = (m.group(1) or "").strip() or m.group(2).split("/")[-1]
            p.imports[alias] = short(m.group(2))
        lines = src.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            m = re.match(r'^type\s+(\w+)\s+struct\s*{\s*$', line)
            if m:
                name, fields = m.group(1), []
                i += 1
                while i < len(lines) and not lines[i].startswith("}"):
                    f = FIELD.match(lines[i])
                    if f and not lines[i].strip().startswith("//"):
                        tags = f.group(3)
                        pb = re.search(r'protobuf:"([^"]*)"', tags)
                        js = re.search(r'json:"([^"]*)"', tags)
                        if pb and js:
                            wire, number, rep, *rest = pb.group(1).split(",")
                            opts = dict(x.split("=", 1) for x in rest if "=" in x)
                            jname, *jopts = js.group(1).split(",")
                            # An embedded struct without a JSON name is inlined by
                            # encoding/json; in protobuf it is a field of its own.
                            inline = f.group(1) is None and jname == ""
                            fields.append((int(number), jname, "omitempty" in jopts,
                                           inline, f.group(2), wire, opts.get("name")))
                    i += 1
                if fields:
                    p.structs[name] = fields
            m = TYPE_DECL.match(line)
            if m and m.group(2) not in ("struct", "interface"):
                p.named[m.group(1)] = m.group(2)
            i += 1
    return p


def main():
    api, machinery = sys.argv[1], sys.argv[2]
    ref = sys.argv[3] if len(sys.argv) > 3 else "HEAD"
    packages = {}
    for repo, base, pkgs in ((api, "k8s.io/api", API_PACKAGES),
                             (machinery, "k8s.io/apimachinery", MACHINERY_PACKAGES)):
        for pkg in pkgs:
            s = short(f"{base}/{pkg}")
            packages[s] = parse(s, list(package_files(repo, ref, pkg)))
    commit = {
        "api": git(api, "rev-parse", ref).strip(),
        "apimachinery": git(machinery, "rev-parse", ref).strip(),
    }

    def resolve(pkg, gotype):
        """(kind, pointer, repeated) of a Go type: kind is a scalar kind, map:k:v, or a
        message; repeated for a slice (some are tagged `opt`, so the Go type says)."""
        pointer = gotype.startswith("*")
        t = gotype.lstrip("*")
        if t == "[]byte":
            return "bytes", pointer, False
        if t.startswith("[]"):
            return resolve(pkg, t[2:])[0], pointer, True
        if t.startswith("map["):
            key, value = re.match(r'map\[([\w.]+)\](.+)', t).groups()
            return f"map:{resolve(pkg, key)[0]}:{resolve(pkg, value)[0]}", pointer, False
        scalars = {"string": "string", "bool": "bool", "int": "int", "int32": "int",
                   "int64": "int", "int16": "int", "uint32": "uint", "uint64": "uint",
                   "uint16": "uint", "float64": "double", "float32": "float",
                   "byte": "int", "time.Duration": "int"}
        if t in scalars:
            return scalars[t], pointer, False
        if "." in t:
            alias, name = t.split(".", 1)
            target = packages.get(pkg.imports.get(alias, ""))
            if target is None:
                raise SystemExit(f"{pkg.name}: unknown package of {gotype}")
            kind, _, repeated = resolve(target, name)
            return kind, pointer, repeated
        qualified = f"{pkg.name}.{t}"
        if qualified in SPECIAL or t in pkg.structs:
            return qualified, pointer, False
        if t in pkg.named:
            kind, _, repeated = resolve(pkg, pkg.named[t])
            return kind, pointer, repeated
        raise SystemExit(f"{pkg.name}: cannot resolve {gotype}")

    out = [f"# Generated by scripts/protobuf-schema.py from k8s.io/api {commit['api']}",
           f"# and k8s.io/apimachinery {commit['apimachinery']}; do not edit."]
    # The special messages' fields are the decoder's own knowledge: their names only.
    for name in sorted(SPECIAL):
        out.append(f"message {name}")
    for pname, pkg in packages.items():
        for sname, fields in sorted(pkg.structs.items()):
            qualified = f"{pname}.{sname}"
            if qualified in SPECIAL:
                continue
            out.append(f"message {qualified}")
            for number, jname, omitempty, inline, gotype, wire, pbname in fields:
                kind, pointer, repeated = resolve(pkg, gotype)
                flags = ""
                if repeated:
                    flags += "r"
                if pointer or not omitempty:
                    flags += "z"
                if inline:
                    flags += "i"
                if wire == "fixed64" and kind == "int":
                    kind = "fixed64"
                out.append(f"{number} {jname or pbname or '-'} {flags or '-'} {kind}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
