#!/usr/bin/env bash
# Build CityFlow (the MAESTRO paper's traffic engine; Apache-2.0, not on PyPI) and install it into a venv.
#
#   tools/build_cityflow.sh PYTHON          (what `make cityflow` runs)
#
# Source, in this order:
#   CITYFLOW_SRC=<folder or .tar.gz>   a local CityFlow tree, or a `git archive` tarball of one;
#   else a git clone of CITYFLOW_REPO (default github.com/cityflow-project/CityFlow) at CITYFLOW_COMMIT.
# The source is copied into build/cityflow/ and built there; nothing of CityFlow enters the repository.
# CityFlow's pybind11 and RapidJSON git submodules are replaced by their PyPI packages: pybind11
# (its CMake config, found with find_package) and the RapidJSON headers shipped in the python-rapidjson
# source distribution. The installed package's version is CityFlow's own (0.1) plus the commit,
# e.g. 0.1+81ee0f4, and `cityflow.__version__` says the same. Then marlinkit's compiled CityFlow reads
# (module marlinkit_cityflow_reads, tools/cityflow_reads/) are built against the same tree and installed beside it.
set -euo pipefail

PY=${1:?usage: tools/build_cityflow.sh PYTHON}
PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")"
CITYFLOW_REPO=${CITYFLOW_REPO:-https://github.com/cityflow-project/CityFlow.git}
CITYFLOW_COMMIT=${CITYFLOW_COMMIT:-81ee0f47659ca66177a71f81676691c58ee89184}
PYBIND11=${PYBIND11:-pybind11==2.13.6}
RAPIDJSON_SDIST=${RAPIDJSON_SDIST:-python-rapidjson==1.22}
WORK=${CITYFLOW_BUILD_DIR:-build/cityflow}

die() { echo "build_cityflow: $*" >&2; exit 1; }
for tool in cmake g++ make; do
    command -v $tool >/dev/null || die "$tool is required (Debian: apt-get install cmake g++ make)"
done

rm -rf "$WORK" && mkdir -p "$WORK/download"
WORK=$(realpath "$WORK")
SRC="$WORK/src"
commit=""
if [[ -n "${CITYFLOW_SRC:-}" ]]; then
    [[ -e "$CITYFLOW_SRC" ]] || die "CITYFLOW_SRC=$CITYFLOW_SRC does not exist (a CityFlow folder or .tar.gz)"
    if [[ -d "$CITYFLOW_SRC" ]]; then
        cp -a "$CITYFLOW_SRC" "$SRC"
        folder=$(basename "$(realpath "$CITYFLOW_SRC")")
        commit=$( { [[ -e "$CITYFLOW_SRC/.git" ]] && git -C "$CITYFLOW_SRC" rev-parse --short=7 HEAD 2>/dev/null; } \
                 || sed -nE 's#^CityFlow-([0-9a-f]{7,40})$#\1#p' <<<"$folder" | cut -c1-7)
    else
        mkdir -p "$SRC" && tar -xzf "$CITYFLOW_SRC" -C "$SRC" --strip-components=1
        top=$(tar -tzf "$CITYFLOW_SRC" | sed -n 1p)
        commit=$(sed -nE 's#^CityFlow-([0-9a-f]{7,40})/?.*#\1#p' <<<"$top" | cut -c1-7)
    fi
    [[ -n "$commit" ]] || commit=local
else
    command -v git >/dev/null || die "git is required to fetch CityFlow (or set CITYFLOW_SRC)"
    git init -q "$SRC"
    git -C "$SRC" fetch -q --depth 1 "$CITYFLOW_REPO" "$CITYFLOW_COMMIT" \
        || die "cannot fetch $CITYFLOW_COMMIT from $CITYFLOW_REPO (no network?)." \
               "Set CITYFLOW_SRC to a local CityFlow tree or tarball."
    git -C "$SRC" checkout -q FETCH_HEAD
    commit=${CITYFLOW_COMMIT:0:7}
fi
[[ -f "$SRC/CMakeLists.txt" && -f "$SRC/src/cityflow.cpp" ]] || die "$SRC is not a CityFlow source tree"

echo "build_cityflow: installing build tools ($PYBIND11) and fetching RapidJSON headers ($RAPIDJSON_SDIST)"
if [[ -x "$(dirname "$PY")/uv" ]]; then
    "$(dirname "$PY")/uv" pip install -q --python "$PY" "$PYBIND11" setuptools wheel
else
    "$PY" -m pip install -q "$PYBIND11" setuptools wheel
fi
"$PY" -m pip download -q --no-deps --no-binary :all: -d "$WORK/download" "$RAPIDJSON_SDIST" \
    || die "cannot download the $RAPIDJSON_SDIST source distribution from PyPI"
sdist=$(find "$WORK/download" -maxdepth 1 -name 'python[-_]rapidjson-*.tar.gz' | sed -n 1p)
[[ -n "$sdist" ]] || die "no python-rapidjson sdist in $WORK/download"
tar -xzf "$sdist" -C "$WORK/download"
headers=$(find "$WORK/download" -type d -path '*rapidjson/include' | sed -n 1p)
[[ -f "$headers/rapidjson/rapidjson.h" ]] || die "no rapidjson/include/rapidjson/rapidjson.h in $sdist"
rm -rf "$SRC/extern/rapidjson" && mkdir -p "$SRC/extern/rapidjson" && cp -a "$headers" "$SRC/extern/rapidjson/include"

# pybind11 from its PyPI package instead of the submodule; the version carries the commit.
cmakedir=$("$PY" -m pybind11 --cmakedir)
"$PY" - "$SRC" "$cmakedir" "$commit" <<'PYEOF'
import pathlib, re, sys
src, cmakedir, commit = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
cmake = src / "CMakeLists.txt"
text = cmake.read_text()
text = text.replace('"extern/pybind11/CMakeLists.txt"', "")
if "add_subdirectory(extern/pybind11)" not in text:
    sys.exit("build_cityflow: CMakeLists.txt has no add_subdirectory(extern/pybind11) to replace")
found = f'find_package(pybind11 CONFIG REQUIRED PATHS "{cmakedir}" NO_DEFAULT_PATH)'
text = text.replace("add_subdirectory(extern/pybind11)", found)
cmake.write_text(text)
setup = src / "setup.py"
text, n = re.subn(r"version='([^']+)'", lambda m: f"version='{m.group(1)}+{commit}'", setup.read_text(), count=1)
if not n:
    sys.exit("build_cityflow: setup.py has no version= to extend with the commit")
setup.write_text(text.replace("'-j2'", "'-j%d' % (os.cpu_count() or 2)"))
PYEOF

echo "build_cityflow: building CityFlow $commit (about a minute on 2 cores)"
start=$(date +%s)
"$PY" -m pip install -q --no-build-isolation "$SRC"
echo "build_cityflow: built and installed in $(( $(date +%s) - start )) s"
"$PY" -c "import cityflow, importlib.metadata as m
print('build_cityflow: cityflow', cityflow.__version__, '/ package', m.version('CityFlow'))"

# marlinkit's own compiled reads of a CityFlow Engine (tools/cityflow_reads/cityflow_reads.cpp, the env's
# per-second lane reads in C++), built against the same sources and pybind11 and installed beside `cityflow`.
echo "build_cityflow: building marlinkit's CityFlow reads (tools/cityflow_reads/cityflow_reads.cpp)"
start=$(date +%s)
here=$(cd "$(dirname "$0")" && pwd)
module_sha256=$("$PY" -c 'import cityflow, hashlib, pathlib
print(hashlib.sha256(pathlib.Path(cityflow.__file__).read_bytes()).hexdigest())')
cmake -S "$here/cityflow_reads" -B "$WORK/reads" -DCITYFLOW_SOURCE="$SRC" -Dpybind11_DIR="$cmakedir" \
      -DPYBIND11_FINDPYTHON=ON -DPython_EXECUTABLE="$PY" \
      -DCITYFLOW_VERSION="$("$PY" -c 'import cityflow; print(cityflow.__version__)')" \
      -DCITYFLOW_MODULE_SHA256="$module_sha256" \
      >"$WORK/reads.log" 2>&1 \
    && cmake --build "$WORK/reads" -j "$(nproc 2>/dev/null || echo 2)" >>"$WORK/reads.log" 2>&1 \
    || { tail -n 30 "$WORK/reads.log" >&2; die "building marlinkit's CityFlow reads failed (log: $WORK/reads.log)"; }
platlib=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['platlib'])")
module=$(find "$WORK/reads" -maxdepth 1 -name 'marlinkit_cityflow_reads*.so' | sed -n 1p)
[[ -n "$module" ]] || die "no marlinkit_cityflow_reads module in $WORK/reads"
installed="$platlib/$(basename "$module")"
cp "$module" "$installed.partial" && mv "$installed.partial" "$installed"
echo "build_cityflow: marlinkit's CityFlow reads built and installed in $(( $(date +%s) - start )) s"
"$PY" -c "import marlinkit_cityflow_reads as m; print('build_cityflow:', m.__file__)"
