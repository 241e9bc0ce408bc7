"""The `steadyocr` command of an installed package (pip's console script): runs the steadyocr binary the package
carries (bin/steadyocr), with the same arguments, in place of this process."""

import os
import sys

from steadyocr import _native


def main():
    exe = _native.steadyocr_executable
    if not exe or not os.path.isfile(exe):
        sys.stderr.write(f"steadyocr: the steadyocr binary is missing ({exe or 'no path'}); reinstall the package "
                         "(pip install .) or set STEADYOCR_EXE to a built binary\n")
        return 2
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
