# Reading the mutant catalog and applying a mutant to a copy of kernels/src, at configure time.
# The format is README.md's: a header of `key: value` lines (a line that starts with a space or
# a tab continues the value above), then one or more `--- search` / `+++ replace` blocks. A
# block's text is its lines, exactly, without the last newline.

# nc_json_string(<out> <text>): text as a JSON string literal, quotes included
function(nc_json_string out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n" text "${text}")
  string(REPLACE "\r" "\\r" text "${text}")
  string(REPLACE "\t" "\\t" text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

# nc_json_append(<var> <item>): appends item to the JSON list text in var, a comma between items
function(nc_json_append var item)
  set(text "${${var}}")
  if(NOT text STREQUAL "")
    string(APPEND text ",")
  endif()
  set(${var} "${text}${item}" PARENT_SCOPE)
endfunction()

# nc_count(<out> <haystack> <needle>): how many times needle occurs (non-overlapping)
function(nc_count out haystack needle)
  set(count 0)
  string(LENGTH "${needle}" step)
  string(FIND "${haystack}" "${needle}" at)
  while(NOT at EQUAL -1)
    math(EXPR count "${count} + 1")
    math(EXPR at "${at} + ${step}")
    string(SUBSTRING "${haystack}" ${at} -1 haystack)
    string(FIND "${haystack}" "${needle}" at)
  endwhile()
  set(${out} ${count} PARENT_SCOPE)
endfunction()

# nc_write_if_changed(<path> <content>): keeps the file's timestamp when nothing changed, so a
# re-configure does not rebuild every mutant
function(nc_write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()

# nc_mutant_read(<catalog file> <prefix>): sets <prefix>_<KEY> for every header key (ID,
# BUG_CLASS, SUMMARY, MIRRORS, EXPECTED_KILLER, FILE, NEEDS_GPU), <prefix>_HUNKS (the count) and
# <prefix>_SEARCH_<i> / <prefix>_REPLACE_<i> for i in 1..HUNKS. Fails loudly on a malformed file.
function(nc_mutant_read path prefix)
  get_filename_component(stem "${path}" NAME_WE)
  file(READ "${path}" text)
  string(REGEX REPLACE "\n+$" "" text "${text}")
  set(text "\n${text}\n")  # every line, the first and the last included, sits between newlines

  string(FIND "${text}" "\n--- search\n" first)
  if(first EQUAL -1)
    message(FATAL_ERROR "mutant catalog ${path}: no '--- search' block")
  endif()
  string(SUBSTRING "${text}" 0 ${first} header)
  string(SUBSTRING "${text}" ${first} -1 body)

  foreach(key id bug_class summary mirrors expected_killer file needs_gpu)
    string(TOUPPER ${key} upper)
    # the key's line, then any continuation lines (starting with a space or a tab)
    if(header MATCHES "\n${key}:[ \t]*([^\n]*(\n[ \t][^\n]*)*)")
      string(REGEX REPLACE "\n[ \t]+" " " value "${CMAKE_MATCH_1}")
      set(${prefix}_${upper} "${value}" PARENT_SCOPE)
      set(value_${key} "${value}")
    else()
      set(${prefix}_${upper} "" PARENT_SCOPE)
      set(value_${key} "")
    endif()
  endforeach()
  foreach(key id bug_class summary mirrors expected_killer file)
    if(value_${key} STREQUAL "")
      message(FATAL_ERROR "mutant catalog ${path}: the header has no '${key}:' line")
    endif()
  endforeach()
  if(NOT value_id STREQUAL stem)
    message(FATAL_ERROR "mutant catalog ${path}: id '${value_id}' must equal the file name '${stem}'")
  endif()

  # body: "\n--- search\n<search>\n+++ replace\n<replace>" repeated, ending in "\n"
  set(hunks 0)
  while(NOT body STREQUAL "\n")
    math(EXPR hunks "${hunks} + 1")
    string(SUBSTRING "${body}" 12 -1 body)  # past "\n--- search\n"
    string(FIND "${body}" "\n+++ replace\n" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "mutant '${stem}' (${path}): block ${hunks} has no '+++ replace' line")
    endif()
    string(SUBSTRING "${body}" 0 ${at} search)
    math(EXPR at "${at} + 12")  # keep the newline before the replacement's first line
    string(SUBSTRING "${body}" ${at} -1 body)
    if(body MATCHES "^\n--- search\n")  # an empty replacement: the lines are deleted
      set(replace "")
    else()
      string(FIND "${body}" "\n--- search\n" next)
      if(next EQUAL -1)
        string(LENGTH "${body}" next)
        math(EXPR next "${next} - 1")
      endif()
      math(EXPR length "${next} - 1")
      string(SUBSTRING "${body}" 1 ${length} replace)
      string(SUBSTRING "${body}" ${next} -1 body)
      if(body STREQUAL "")
        set(body "\n")
      endif()
    endif()
    if(search STREQUAL "")
      message(FATAL_ERROR "mutant '${stem}' (${path}): block ${hunks} has an empty search text")
    endif()
    set(${prefix}_SEARCH_${hunks} "${search}" PARENT_SCOPE)
    set(${prefix}_REPLACE_${hunks} "${replace}" PARENT_SCOPE)
  endwhile()
  set(${prefix}_HUNKS ${hunks} PARENT_SCOPE)
endfunction()

# nc_mutant_apply(<prefix> <original text> <out text> <out offsets>): applies the blocks read by
# nc_mutant_read in order. Each search text must occur exactly once in the original source and
# once in the text as the blocks before it left it; offsets are in the original.
function(nc_mutant_apply prefix original out_text out_offsets)
  set(text "${original}")
  set(offsets "")
  foreach(i RANGE 1 ${${prefix}_HUNKS})
    set(search "${${prefix}_SEARCH_${i}}")
    nc_count(in_original "${original}" "${search}")
    nc_count(in_text "${text}" "${search}")
    if(NOT in_original EQUAL 1 OR NOT in_text EQUAL 1)
      message(FATAL_ERROR
        "mutant '${${prefix}_ID}' (mutants/catalog/${${prefix}_ID}.mutant): the search text of block ${i} "
        "occurs ${in_original} times in kernels/${${prefix}_FILE}; it must occur exactly once. Has the kernel "
        "source changed? Update the mutant's search text to the new source.\nsearch text:\n${search}")
    endif()
    string(FIND "${original}" "${search}" at)
    list(APPEND offsets ${at})
    string(REPLACE "${search}" "${${prefix}_REPLACE_${i}}" text "${text}")
  endforeach()
  set(${out_text} "${text}" PARENT_SCOPE)
  set(${out_offsets} "${offsets}" PARENT_SCOPE)
endfunction()
