# Writes OUT: the commit of the source tree the bench is built from, so every report the bench
# writes names the commit it measured without being told (`--commit` still wins). Run at every
# build (cmake -P); the header changes only when the commit or the tree's state does.
#   cmake -DSOURCE=<repository> -DOUT=<header> -P commit.cmake
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND git -C "${SOURCE}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR commit STREQUAL "")
  set(commit "")  # not a git checkout: the reports say "not given"
else()
  # tracked files changed since the commit: the build is not that commit's
  execute_process(COMMAND git -C "${SOURCE}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT changes STREQUAL "")
    string(APPEND commit "+changes")
  endif()
endif()
# file(CONFIGURE) rewrites the header only when its text changes (no rebuild otherwise)
set(text "// written by harness/bench/commit.cmake at build time\n#define NORMCHECK_BUILD_COMMIT \"${commit}\"\n")
file(CONFIGURE OUTPUT "${OUT}" CONTENT "${text}" @ONLY)
