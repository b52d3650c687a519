#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build of normcheck's fuzz targets (corpus/fuzzers). The compile
# step gives $CC, $CXX, $CFLAGS, $CXXFLAGS (sanitizer and coverage flags) and $LIB_FUZZING_ENGINE;
# normcheck's CMake takes the engine as NORMCHECK_FUZZ_ENGINE and hard-codes no sanitizer flag.
# Writes to $OUT: each target, its .dict/.options, <target>_seed_corpus.zip, and lib/ with the
# simt kernel plugin the targets load (and the shared libraries they need at run time).

# dependencies: built with the same compiler and C++ library, without instrumentation
deps=$WORK/deps
plain_cxxflags="${CXXFLAGS_EXTRA:-} -fPIC"
if [ ! -f "$deps/.built" ]; then
  (cd "$SRC/boost_1_81_0" && ./bootstrap.sh --with-toolset=clang --with-libraries=context >/dev/null &&
   ./b2 -q toolset=clang cxxflags="$plain_cxxflags" linkflags="${CXXFLAGS_EXTRA:-}" link=static \
        variant=release --with-context --prefix="$deps" install >/dev/null)
  for dep in googletest rapidcheck; do
    cmake -S "$SRC/$dep" -B "$WORK/$dep" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$deps" \
          -DCMAKE_C_FLAGS="-fPIC" -DCMAKE_CXX_FLAGS="$plain_cxxflags" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
          -DRC_INSTALL_ALL_EXTRAS=ON -DBUILD_GMOCK=OFF
    cmake --build "$WORK/$dep" --target install
  done
  touch "$deps/.built"
fi

# the targets: the fuzz preset's settings, with OSS-Fuzz's flags and engine
cmake -S "$SRC/normcheck" -B "$WORK/normcheck" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$deps" -DBoost_USE_STATIC_LIBS=ON \
      -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
      -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
      -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath,\$ORIGIN/lib" \
      -DNORMCHECK_ENABLE_FUZZING=ON -DNORMCHECK_FUZZ_ENGINE="$LIB_FUZZING_ENGINE"
targets="contract_fuzzer value_fuzzer"
cmake --build "$WORK/normcheck" --target normcheck_simt $targets

mkdir -p "$OUT/lib"
cp "$WORK/normcheck/lib/libnormcheck_simt.so" "$OUT/lib/"
# the run-time image has no MPFR/GMP: ship them beside the plugin (found through the rpath)
for so in libmpfr.so.6 libgmp.so.10; do
  path=$(ldconfig -p | awk -v so="$so" '$1 == so {print $NF; exit}')
  [ -n "$path" ] && cp -L "$path" "$OUT/lib/"
done
for t in $targets; do
  cp "$WORK/normcheck/bin/$t" "$OUT/"
  cp "$SRC/normcheck/corpus/fuzzers/$t.dict" "$SRC/normcheck/corpus/fuzzers/$t.options" "$OUT/"
  (cd "$SRC/normcheck/corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
done
