# SPDX-License-Identifier: MIT
# The build's identity, taken at build time (cmake -P, on every build): `git describe --dirty`
# of the source tree (whether a tracked file was modified since its commit) and a SHA-256 of
# the sources that go into the binary (the C files of the four floors and the top
# CMakeLists.txt, by their path relative to the tree and their content), written to OUT as C
# defines. OUT is rewritten only when it changes, so an unchanged tree recompiles nothing.
# Inputs: SOURCE_DIR, OUT, GIT (the git program; empty without git).
set(describe "")
set(dirty -1)  # not a git checkout (a release tarball): unknown
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND ${GIT} describe --always --dirty --abbrev=12
                  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE describe
                  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0)
    string(REGEX REPLACE "[^A-Za-z0-9._+-]" "" describe "${describe}")
    if(describe MATCHES "-dirty$")
      set(dirty 1)
    else()
      set(dirty 0)
    endif()
  else()
    set(describe "")
  endif()
endif()

file(GLOB_RECURSE sources RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/driver/*.c ${SOURCE_DIR}/driver/*.h ${SOURCE_DIR}/workers/*.c
     ${SOURCE_DIR}/workers/*.h ${SOURCE_DIR}/platform/*.c ${SOURCE_DIR}/platform/*.h
     ${SOURCE_DIR}/util/*.c ${SOURCE_DIR}/util/*.h)
list(SORT sources)
list(APPEND sources CMakeLists.txt)
set(listing "")
foreach(f ${sources})
  file(SHA256 ${SOURCE_DIR}/${f} h)
  string(APPEND listing "${f} ${h}\n")
endforeach()
string(SHA256 source_sha256 "${listing}")
list(LENGTH sources nsources)

set(text "/* Generated at build time by scripts/cmake/buildinfo.cmake: do not edit. */
#define STAGEBENCH_DESCRIBE \"${describe}\"
#define STAGEBENCH_DIRTY ${dirty}
#define STAGEBENCH_SOURCE_SHA256 \"${source_sha256}\"
#define STAGEBENCH_SOURCE_FILES ${nsources}
")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
