#!/usr/bin/python3
"""The size of the image scripts/build_image.sh made, and its large parts, measured on its root filesystem (bytes of
the files, uncompressed): the NVIDIA libraries one by one, the models, steadyocr, and the Debian part split into the
pristine minbase and what each run-time package of scripts/debian-packages.txt ('image:') pulls in alone (its
dependency closure less everything another image package needs too; the rest is 'shared').

  scripts/image_size.py ROOT PREFIX NVIDIA_DIR IMAGE REPORTED_SIZE MINBASE_TARBALL PACKAGE...
(build_image.sh runs it; for a built image: ROOT=$(buildah mount $(buildah from IMAGE)).)
"""
import os
import subprocess
import sys
import tarfile

MIB = 2**20


def files_size(root, paths, seen):
    """Bytes of the regular files among paths; a hard link counts once (seen: inodes already counted)."""
    total = 0
    for p in paths:
        full = os.path.join(root, p.lstrip("/"))
        if os.path.isfile(full) and not os.path.islink(full):
            st = os.lstat(full)
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def du(path):
    """Bytes of the regular files under path, each inode once (Mesa's drivers are hard links of one file)."""
    total, seen = 0, set()
    for d, _, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(d, f))
            if not os.path.islink(os.path.join(d, f)) and (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def in_root(root, *cmd):
    return subprocess.run(["chroot", root, *cmd], capture_output=True, text=True, check=True).stdout


def dependency_graph(root):
    """{package: set of installed packages it depends on}, from the root's dpkg status: Depends and Pre-Depends, every
    installed alternative of an 'a | b', virtual packages through Provides, ':any' qualifiers dropped."""
    fmt = "${Package}\t${Provides}\t${Depends}, ${Pre-Depends}\n"
    rows = [l.split("\t") for l in in_root(root, "dpkg-query", "-W", "-f", fmt).splitlines() if l.strip()]
    installed = {r[0] for r in rows}
    provides = {}
    for pkg, prov, _ in rows:
        for v in filter(None, (x.split("(")[0].strip() for x in prov.split(","))):
            provides.setdefault(v, set()).add(pkg)
    name = lambda dep: dep.split("(")[0].strip().split(":")[0]
    graph = {}
    for pkg, _, deps in rows:
        out = set()
        for clause in filter(None, (c.strip() for c in deps.split(","))):
            for alt in (name(a) for a in clause.split("|")):
                out |= ({alt} & installed) | provides.get(alt, set())
        graph[pkg] = out
    return graph


def closure(graph, pkg):
    """pkg and every installed package it depends on, recursively."""
    seen, todo = set(), [pkg]
    while todo:
        p = todo.pop()
        if p in seen or p not in graph:
            continue
        seen.add(p)
        todo.extend(graph[p])
    return seen


def main(argv):
    root, prefix, nvidia, image, reported, tarball = argv[:6]
    image_pkgs = argv[6:]
    total = du(root)
    opt = du(os.path.join(root, prefix.lstrip("/")))
    print(f"image {image}: {reported} as buildah reports it; its root holds {total / MIB:.0f} MiB (uncompressed)")
    rows = []
    nv = os.path.join(root, nvidia.lstrip("/"))
    libs = sorted(os.listdir(nv)) if os.path.isdir(nv) else []
    groups = [("cuBLASLt", lambda f: f.startswith("libcublasLt")), ("cuBLAS", lambda f: f.startswith("libcublas.")),
              ("cuDNN precompiled engines", lambda f: "engines_precompiled" in f),
              ("cuDNN heuristics", lambda f: "heuristic" in f),
              ("cuDNN other parts", lambda f: f.startswith("libcudnn") and "engines_precompiled" not in f and
               "heuristic" not in f)]
    for name, pick in groups:
        chosen = [(f, os.path.getsize(os.path.join(nv, f))) for f in libs if pick(f)]
        if chosen:
            rows.append((name, sum(s for _, s in chosen), ", ".join(f"{f} {s / MIB:.0f}" for f, s in chosen)))
    rows.append(("models", du(os.path.join(root, prefix.lstrip("/"), "models")), "PP-OCRv4 det/rec, v2.0 cls, dictionary"))
    rows.append(("steadyocr", du(os.path.join(root, prefix.lstrip("/"), "bin")) +
                 du(os.path.join(root, prefix.lstrip("/"), "lib", "steadyocr")),
                 "bin/ (steadyocr, steadyocr-doctor, doctor_metrics.py), lib/steadyocr/ (engine, CUDA plugin)"))

    # Debian: real bytes per package (dpkg -L), minbase from the pristine root's dpkg status.
    status = in_root(root, "dpkg-query", "-W", "-f", "${Package}\n").split()
    installed = set(status)
    sizes, seen = {}, set()
    for p in sorted(installed):
        sizes[p] = files_size(root, in_root(root, "dpkg-query", "-L", p).splitlines(), seen)
    with tarfile.open(tarball) as t:
        text = t.extractfile("./var/lib/dpkg/status").read().decode()
    minbase = {l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("Package:")} & installed
    added = installed - minbase
    graph = dependency_graph(root)
    closures = {p: closure(graph, p) & added for p in image_pkgs}
    # OpenCV's packages count as one part: together they are what pulls GDAL, GDCM, HDF5, Mesa/LLVM, Qt5...
    parts = {}
    for p in image_pkgs:
        key = "OpenCV 4.6 (" + ", ".join(x for x in image_pkgs if x.startswith("libopencv")) + ")" \
            if p.startswith("libopencv") else p
        parts.setdefault(key, set()).update(closures[p])
    exclusive = {}
    for k, pk in parts.items():
        others = set().union(*(v for kk, v in parts.items() if kk != k))
        exclusive[k] = pk - others
    shared = added - set().union(*exclusive.values())
    debian_rows = [(f"  minbase ({len(minbase)} packages)", sum(sizes[p] for p in minbase), "debootstrap --variant=minbase")]
    for k, pk in sorted(exclusive.items(), key=lambda kv: -sum(sizes[p] for p in kv[1])):
        big = sorted(pk, key=lambda p: -sizes[p])[:6]
        debian_rows.append((f"  {k}: {len(pk)} packages" if len(k) < 40 else f"  OpenCV and what only it pulls ({len(pk)} packages)",
                            sum(sizes[p] for p in pk), ", ".join(f"{p} {sizes[p] / MIB:.0f}" for p in big)))
    if shared:
        big = sorted(shared, key=lambda p: -sizes[p])[:6]
        debian_rows.append((f"  shared by several ({len(shared)} packages)", sum(sizes[p] for p in shared),
                            ", ".join(f"{p} {sizes[p] / MIB:.0f}" for p in big)))
    owned = sum(sizes.values())
    rows.append((f"Debian ({len(installed)} packages)", total - opt, f"outside {prefix}; of it, in packages' files:"))
    for name, size, what in rows:
        print(f"  {name:44s} {size / MIB:7.0f} MiB  {what}")
    for name, size, what in debian_rows:
        print(f"  {name:44s} {size / MIB:7.0f} MiB  {what}")
    rest = total - opt - owned
    print(f"  {'  not in any package (dpkg/ld caches, users)':44s} {rest / MIB:7.0f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:])
