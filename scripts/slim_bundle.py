#!/usr/bin/python3
"""Packs binaries for the GPU machine like ../shared/tools/device-bundle.sh, but small enough to travel (64 MiB).

Debian's OpenCV image codecs pull in GDAL and GDCM (GIS and DICOM readers) and through them ~100 libraries
(poppler, hdf5, proj, icu, x265, ...): the plain bundle of `steadyocr` is over 100 MiB compressed. steadyocr never
reads those formats, so this script replaces each such library by a stub exporting the functions the remaining
libraries import from it (each returns 0: "cannot open"), and carries only the DT_NEEDED closure that remains.

  scripts/slim_bundle.py .devbundle build/steadyocr build/libsteadyocr_cuda13.so [more binaries] -- models \\
      ../shared/tools/peers ../shared/tools/ocr_eval.py ../shared/data/synth-dev ../shared/data/sroie-dev

Same layout as device-bundle.sh: bundle/{bin,lib,files,env.sh} in OUT/bundle.tgz; on the device
`tar xzf .devbundle/bundle.tgz -C /tmp && /tmp/bundle/env.sh /tmp/bundle/bin/steadyocr ...`.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Never carried: the GPU machine has its own (glibc, libstdc++, the CUDA driver and libraries).
SKIP = re.compile(r"libc\.so|libm\.so|ld-linux|libgcc_s|libstdc\+\+|libpthread|libdl\.|librt\.|libcuda\.|libcudart|"
                  r"libcudnn|libcublas|libnvidia|libnvrtc|libcufft|libcurand")
# Replaced by stubs: readers of formats steadyocr never decodes (GDAL, GDCM, OpenEXR) and OpenCV's OpenGL interop
# (GLX, and through it X11 and xcb), which it never calls.
STUB = re.compile(r"^(libgdal\.so\.|libgdcm[A-Za-z]*\.so\.|libOpenEXR-[0-9_]+\.so\.|libGLX\.so\.)")
SEARCH = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/local/cuda/lib64", "/usr/local/lib"]


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def needed(path):
    return re.findall(r"\(NEEDED\).*\[(.+?)\]", run("readelf", "-d", path))


def runpath(path):
    m = re.search(r"\((?:RUNPATH|RPATH)\).*\[(.+?)\]", run("readelf", "-d", path))
    return m.group(1).split(":") if m else []


def resolve(name, origin):
    for d in runpath(origin) + SEARCH + [os.path.dirname(origin)]:
        p = os.path.join(d.replace("$ORIGIN", os.path.dirname(origin)), name)
        if os.path.exists(p):
            return os.path.realpath(p)
    ld = run("ldconfig", "-p")
    m = re.search(r"^\s*" + re.escape(name) + r" \(libc6,x86-64\) => (\S+)", ld, re.M)
    return os.path.realpath(m.group(1)) if m else None


def closure(binaries):
    libs, stubs, todo = {}, {}, list(binaries)
    while todo:
        path = todo.pop()
        for n in needed(path):
            if SKIP.search(n) or n in libs or n in stubs:
                continue
            real = resolve(n, path)
            if real is None:
                sys.exit(f"{n} (needed by {path}) not found")
            if STUB.match(n):
                stubs[n] = real
            else:
                libs[n] = real
                todo.append(real)
    return libs, stubs


def make_stub(name, real, importers, out_dir, work):
    exported = set()
    for line in run("nm", "-D", "--defined-only", real).splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "TtWiDdBbRrVv":
            exported.add(parts[2].split("@")[0])
    wanted = set()
    for imp in importers:
        for line in run("nm", "-D", "--undefined-only", imp).splitlines():
            sym = line.split()[-1].split("@")[0]
            if sym in exported:
                wanted.add(sym)
    src = os.path.join(work, name + ".c")
    with open(src, "w") as f:
        f.write("/* stub of %s: steadyocr never calls it */\n" % name)
        for i, s in enumerate(sorted(wanted)):
            f.write('void* so_stub_%d(void) __asm__("%s");\nvoid* so_stub_%d(void) { return 0; }\n' % (i, s, i))
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", os.path.join(out_dir, name), "-Wl,-soname," + name, src],
                   check=True)
    return len(wanted)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out = argv[1]
    args = argv[2:]
    split = args.index("--") if "--" in args else len(args)
    binaries, extras = args[:split], args[split + 1:]
    work = tempfile.mkdtemp()
    b = os.path.join(work, "bundle")
    for d in ("bin", "lib", "files"):
        os.makedirs(os.path.join(b, d))
    for p in binaries:
        shutil.copy(os.path.realpath(p), os.path.join(b, "bin", os.path.basename(p)))
    libs, stubs = closure([os.path.realpath(p) for p in binaries])
    for n, real in libs.items():
        shutil.copy(real, os.path.join(b, "lib", n))
    carried = [os.path.realpath(p) for p in binaries] + list(libs.values())
    for n, real in stubs.items():
        k = make_stub(n, real, [p for p in carried if n in needed(p)], os.path.join(b, "lib"), work)
        print(f"stub {n}: {k} functions")
    for e in extras:
        dst = os.path.join(b, "files", os.path.basename(os.path.normpath(e)))
        if os.path.isdir(e):
            shutil.copytree(e, dst, symlinks=False)
        else:
            shutil.copy(e, dst)
    with open(os.path.join(b, "env.sh"), "w") as f:
        f.write('#!/bin/bash\nhere=$(cd "$(dirname "$0")" && pwd)\n'
                'export LD_LIBRARY_PATH="$here/lib:$here/bin:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"\n'
                'exec "$@"\n')
    os.chmod(os.path.join(b, "env.sh"), 0o755)
    os.makedirs(out, exist_ok=True)
    tgz = os.path.join(out, "bundle.tgz")
    subprocess.run(["tar", "czf", tgz, "-C", work, "bundle"], check=True)
    shutil.rmtree(work)
    print(f"{tgz}: {os.path.getsize(tgz) / 2**20:.1f} MiB, {len(libs)} libraries, {len(stubs)} stubs "
          "(the device carries at most 64 MiB with the working tree)")


if __name__ == "__main__":
    main(sys.argv)
