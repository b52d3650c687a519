# cmake -DWORK=<dir> -P catalog_test.cmake
# The catalog reader and applier of ../catalog.cmake: a two-block mutant with an empty
# replacement reads back exactly, applies exactly, and a search text that no longer matches
# the kernel source fails loudly, naming the mutant.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../catalog.cmake)
file(MAKE_DIRECTORY ${WORK})

function(expect what got want)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "catalog_test: ${what}: got [${got}], want [${want}]")
  endif()
endfunction()

file(WRITE ${WORK}/two-blocks.mutant
"id: two-blocks
bug_class: a class; with a semicolon
summary: changes two places
mirrors: first line
  continued here
expected_killer: differential
file: src/a.cuh
--- search
  float s = 0.0f;  // [brackets]
  s += x;
+++ replace
  float s = 1.0f;  // [brackets]
  s += x;
--- search
  zero();
+++ replace
")
nc_mutant_read(${WORK}/two-blocks.mutant m)
expect("id" "${m_ID}" "two-blocks")
expect("bug class" "${m_BUG_CLASS}" "a class; with a semicolon")
expect("continued value" "${m_MIRRORS}" "first line continued here")
expect("no needs_gpu" "${m_NEEDS_GPU}" "")
expect("blocks" "${m_HUNKS}" "2")
expect("search 1" "${m_SEARCH_1}" "  float s = 0.0f;  // [brackets]\n  s += x;")
expect("replace 1" "${m_REPLACE_1}" "  float s = 1.0f;  // [brackets]\n  s += x;")
expect("search 2" "${m_SEARCH_2}" "  zero();")
expect("empty replace 2" "${m_REPLACE_2}" "")

set(source "void f() {\n  float s = 0.0f;  // [brackets]\n  s += x;\n  zero();\n}\n")
nc_mutant_apply(m "${source}" mutated offsets)
expect("mutated" "${mutated}" "void f() {\n  float s = 1.0f;  // [brackets]\n  s += x;\n\n}\n")
expect("offsets" "${offsets}" "11;54")
nc_json_string(j "a\"b\\c\nd")
expect("json" "${j}" "\"a\\\"b\\\\c\\nd\"")

# a search text that is not in the source: configure must stop, naming the mutant
file(WRITE ${WORK}/stale.mutant
"id: stale
bug_class: b
summary: s
mirrors: m
expected_killer: e
file: src/a.cuh
--- search
  float s = 2.0f;
+++ replace
  float s = 3.0f;
")
file(WRITE ${WORK}/apply_stale.cmake "
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../catalog.cmake)
nc_mutant_read(${WORK}/stale.mutant m)
nc_mutant_apply(m \"${source}\" out offsets)
")
execute_process(COMMAND ${CMAKE_COMMAND} -P ${WORK}/apply_stale.cmake RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "catalog_test: a stale search text was accepted")
endif()
if(NOT err MATCHES "mutant 'stale'" OR NOT err MATCHES "occurs 0 times")
  message(FATAL_ERROR "catalog_test: the failure does not name the mutant and the count:\n${err}")
endif()
# a search text found twice is just as fatal
file(WRITE ${WORK}/twice.mutant
"id: twice
bug_class: b
summary: s
mirrors: m
expected_killer: e
file: src/a.cuh
--- search
s
+++ replace
t
")
file(WRITE ${WORK}/apply_twice.cmake "
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../catalog.cmake)
nc_mutant_read(${WORK}/twice.mutant m)
nc_mutant_apply(m \"${source}\" out offsets)
")
execute_process(COMMAND ${CMAKE_COMMAND} -P ${WORK}/apply_twice.cmake RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "occurs [0-9]+ times")
  message(FATAL_ERROR "catalog_test: an ambiguous search text was accepted:\n${err}")
endif()
message(STATUS "catalog_test: the catalog format reads, applies and fails as documented")
