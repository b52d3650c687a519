#!/usr/bin/env bash
# Moving a cuda build to a GPU machine that has only the CUDA toolkit, in a small folder.
#   carry.sh pack     (development machine) build/cuda -> .gpucarry/: the programs, every
#                     plugin, the Python bridge's script, the mutant manifest and ctest's files,
#                     stripped; the mutants' cuda plugins, built first, in one xz archive (BUILD
#                     names another build; MUTANTS='ID ...' builds and carries those mutants
#                     only, shell patterns allowed: the whole zoo's, about 73 MiB, exceed the device tool's 64)
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
    # ctest's files (the property suite's script among them), with the source tree's absolute
    # path they name recorded for unpack
    carry=$(realpath "$CARRY")
    (cd "$BUILD" && find . \( -name CTestTestfile.cmake -o -name 'property_tests*.cmake' \) -exec cp --parents {} "$carry" \;)
    # the source tree the build was configured from (a worktree's build included)
    sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" > "$CARRY/ORIGIN"
    # every program the build has (test binaries included) and every plugin but the mutants
    for p in "$BUILD"/bin/*; do
      [ -f "$p" ] && [ -x "$p" ] && strip -o "$CARRY/bin/$(basename "$p")" "$p"
    done
    for so in "$BUILD"/lib/*.so; do
      case $(basename "$so") in libnormcheck_mutant_*) continue ;; esac
      strip -o "$CARRY/lib/$(basename "$so")" "$so"
    done
    # the Python bridge's worker script and the torch peer sit beside the plugins
    cp "$BUILD"/lib/*.py "$CARRY/lib/" 2>/dev/null || true
    [ -f "$BUILD/lib/normcheck_mutants.json" ] && cp "$BUILD/lib/normcheck_mutants.json" "$CARRY/lib/"
    # the mutants' cuda plugins are not in the default build: build those asked for
    mutants=() targets=()
    set -f; patterns=(${MUTANTS:-*}); set +f
    if grep -q '^NORMCHECK_ENABLE_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt"; then
      for pattern in "${patterns[@]}"; do
        for f in mutants/catalog/$pattern.mutant; do
          [ -f "$f" ] || continue
          id=$(basename "$f" .mutant)
          targets+=("mutant_${id}_cuda") mutants+=("libnormcheck_mutant_${id}_cuda.so")
        done
      done
    fi
    [ ${#targets[@]} -eq 0 ] || cmake --build "$BUILD" --target "${targets[@]}" >&2
    if [ ${#mutants[@]} -gt 0 ]; then
      (cd "$BUILD/lib" && tar cf - "${mutants[@]}") | xz -T2 -6 > "$CARRY/mutants.tar.xz"
    fi
    echo "carry.sh: ${#mutants[@]} cuda mutant plugin(s)"
    du -sh "$CARRY"
    ;;
  unpack)
    [ -d "$CARRY" ] || { echo "carry.sh unpack: no $CARRY folder (name it in the device call's carry)" >&2; exit 1; }
    origin=$(cat "$CARRY/ORIGIN")
    rm -rf "$BUILD" "$CARRY/ORIGIN"
    mkdir -p "$(dirname "$BUILD")"
    mv "$CARRY" "$BUILD"
    find "$BUILD" \( -name CTestTestfile.cmake -o -name 'property_tests*.cmake' \) -exec sed -i "s|$origin|$(pwd)|g" {} +
    if [ -f "$BUILD/mutants.tar.xz" ]; then
      python3 -c "import lzma, tarfile, sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
        "$BUILD/mutants.tar.xz" "$BUILD/lib"
      rm "$BUILD/mutants.tar.xz"
    fi
    ;;
  *)
    echo "usage: harness/bench/carry.sh pack|unpack" >&2
    exit 64
    ;;
esac
