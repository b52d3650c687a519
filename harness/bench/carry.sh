#!/usr/bin/env bash
# Moving a cuda build to a GPU machine that has only the CUDA toolkit, in a small folder.
#   carry.sh pack     (development machine) build/cuda -> .gpucarry/: the programs, the
#                     shipped plugins, the mutant manifest and ctest's files, stripped; the
#                     mutant plugins in one xz archive
#   carry.sh unpack   (GPU machine) .gpucarry/ -> build/cuda, ctest's paths rewritten to
#                     this checkout, the mutant plugins extracted
# Only the standard tools and python3 are needed on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build/cuda}
CARRY=.gpucarry

case "${1:-}" in
  pack)
    rm -rf "$CARRY"
    mkdir -p "$CARRY/bin" "$CARRY/lib"
    # ctest's files, with the source tree's absolute path they name recorded for unpack
    carry=$(realpath "$CARRY")
    (cd "$BUILD" && find . -name CTestTestfile.cmake -exec cp --parents {} "$carry" \;)
    pwd > "$CARRY/ORIGIN"
    for p in normcheck normcheck-mutants kernel_test property_test harness_test \
             contract_fuzzer_replay value_fuzzer_replay mutants_runner_test; do
      [ -x "$BUILD/bin/$p" ] && strip -o "$CARRY/bin/$p" "$BUILD/bin/$p"
    done
    for so in "$BUILD"/lib/libnormcheck_cuda.so "$BUILD"/lib/libnormcheck_simt.so "$BUILD"/lib/libnormcheck_padded_mean*.so; do
      [ -f "$so" ] && strip -o "$CARRY/lib/$(basename "$so")" "$so"
    done
    cp "$BUILD/lib/normcheck_mutants.json" "$CARRY/lib/"
    (cd "$BUILD/lib" && tar cf - libnormcheck_mutant_*_cuda.so) | xz -T2 -6 > "$CARRY/mutants.tar.xz"
    du -sh "$CARRY"
    ;;
  unpack)
    [ -d "$CARRY" ] || { echo "carry.sh unpack: no $CARRY folder (name it in the device call's carry)" >&2; exit 1; }
    origin=$(cat "$CARRY/ORIGIN")
    rm -rf "$BUILD" "$CARRY/ORIGIN"
    mkdir -p "$(dirname "$BUILD")"
    mv "$CARRY" "$BUILD"
    find "$BUILD" -name CTestTestfile.cmake -exec sed -i "s|$origin|$(pwd)|g" {} +
    python3 -c "import lzma, tarfile, sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
      "$BUILD/mutants.tar.xz" "$BUILD/lib"
    rm "$BUILD/mutants.tar.xz"
    ;;
  *)
    echo "usage: harness/bench/carry.sh pack|unpack" >&2
    exit 64
    ;;
esac
