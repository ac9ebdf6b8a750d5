# SPDX-License-Identifier: MIT
# CPack's last step before it makes the .deb (CPACK_PRE_BUILD_SCRIPTS, set for DEB by
# cpack_project.cmake): Debian's policy on the staged tree, as debhelper would make it. The
# programs stripped as dh_strip does (debug symbols, .comment and .note sections); every man
# page the install put there compressed with gzip -9n (a link to a page made a link to the
# compressed page); the doc directory given the machine-readable copyright (which holds the
# license: LICENSE is left out) and changelog.Debian.gz; lintian's overrides, each with its
# reason.
set(root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}${CPACK_PACKAGING_INSTALL_PREFIX}")
if(NOT IS_DIRECTORY "${root}/${CPACK_STAGEBENCH_DOCDIR}")
  message(FATAL_ERROR "deb_stage: no ${root}/${CPACK_STAGEBENCH_DOCDIR} in the staged tree")
endif()

function(gzip_to src dest)
  execute_process(COMMAND ${CPACK_STAGEBENCH_GZIP} -9nc "${src}" OUTPUT_FILE "${dest}.tmp"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "deb_stage: gzip ${src} failed (${rc})")
  endif()
  file(CHMOD "${dest}.tmp" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  file(RENAME "${dest}.tmp" "${dest}")
endfunction()

set(programs "")
foreach(dir ${CPACK_STAGEBENCH_PROGRAM_DIRS})
  file(GLOB in_dir LIST_DIRECTORIES false "${root}/${dir}/*")
  list(APPEND programs ${in_dir})
endforeach()
foreach(program ${programs})
  file(READ "${program}" magic LIMIT 4 HEX)
  if(magic STREQUAL "7f454c46")
    execute_process(COMMAND ${CPACK_STAGEBENCH_STRIP} --remove-section=.comment
                            --remove-section=.note --strip-unneeded "${program}"
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "deb_stage: strip ${program} failed (${rc})")
    endif()
  endif()
endforeach()

file(GLOB_RECURSE pages LIST_DIRECTORIES false "${root}/${CPACK_STAGEBENCH_MANDIR}/*")
foreach(page ${pages})
  if(page MATCHES "\\.gz$")
    continue()
  endif()
  if(IS_SYMLINK "${page}")
    file(READ_SYMLINK "${page}" target)
    file(REMOVE "${page}")
    file(CREATE_LINK "${target}.gz" "${page}.gz" SYMBOLIC)
  else()
    gzip_to("${page}" "${page}.gz")
    file(REMOVE "${page}")
  endif()
endforeach()

set(doc "${root}/${CPACK_STAGEBENCH_DOCDIR}")
file(COPY "${CPACK_STAGEBENCH_COPYRIGHT}" DESTINATION "${doc}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
gzip_to("${CPACK_STAGEBENCH_CHANGELOG}" "${doc}/changelog.Debian.gz")
file(REMOVE "${doc}/LICENSE")
set(overrides "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/usr/share/lintian/overrides")
file(MAKE_DIRECTORY "${overrides}")
configure_file("${CPACK_STAGEBENCH_LINTIAN_OVERRIDES}" "${overrides}/stagebench" COPYONLY)
file(CHMOD "${overrides}/stagebench" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
