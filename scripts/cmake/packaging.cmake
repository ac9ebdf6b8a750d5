# SPDX-License-Identifier: MIT
# CPack: `make package` (or `cpack -G DEB`, `cpack -G RPM`) builds a .deb and an .rpm of what
# `make install` installs. Configure with -DCMAKE_INSTALL_PREFIX=/usr for a package: the
# Python package's directory is asked of the interpreter for that prefix (Debian:
# /usr/lib/python3/dist-packages), so build the .rpm on the distribution it is for.
set(CPACK_GENERATOR "DEB;RPM")
set(CPACK_PACKAGE_NAME stagebench)
set(CPACK_PACKAGE_VENDOR "The stagebench authors")
# Who builds and supports these packages (the .deb's Maintainer, the .rpm's Packager, the
# changelog's signer): "Full Name <address>". Default: Debian's DEBFULLNAME and DEBEMAIL when
# set, as dch takes them; else the authors' address.
if(DEFINED ENV{DEBEMAIL} AND DEFINED ENV{DEBFULLNAME})
  set(maintainer "$ENV{DEBFULLNAME} <$ENV{DEBEMAIL}>")
else()
  set(maintainer "The stagebench authors <stagebench@example.org>")
endif()
set(STAGEBENCH_MAINTAINER "${maintainer}" CACHE STRING
    "Maintainer of the packages, 'Full Name <address>' (default: DEBFULLNAME <DEBEMAIL>)")
if(NOT STAGEBENCH_MAINTAINER MATCHES "^[^<>@]*[^<>@ ] <[^<>@ ]+@[^<>@ ]+[.][^<>@ ]+>$")
  message(FATAL_ERROR "STAGEBENCH_MAINTAINER '${STAGEBENCH_MAINTAINER}' is not 'Full Name "
                      "<user@host.domain>' (Debian's Maintainer field)")
endif()
set(CPACK_PACKAGE_CONTACT "${STAGEBENCH_MAINTAINER}")
# Debian's limits: a synopsis under 80 characters, description lines under 80.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "I/O benchmarks of HPC nodes against their /stage servers")
set(CPACK_PACKAGE_DESCRIPTION
    "stagebench times the reads and writes of every core of a node against its
/stage server directory (C, hwloc, pthreads). The cluster tools, in Python:
stagebench-cluster runs it on every node of a cluster at once,
stagebench-collect merges the results into one report, stagebench-cron
validates the servers nightly, stagebench-sim tries it all on one machine.")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
# The packages install under the configured prefix; the source tarball holds the sources only.
find_program(GZIP gzip)
configure_file(${CMAKE_CURRENT_LIST_DIR}/cpack_project.cmake.in
               ${CMAKE_BINARY_DIR}/packaging/cpack_project.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/packaging/cpack_project.cmake)
set(CPACK_STRIP_FILES OFF)

# Debian's changelog (changelog.Debian.gz, added by deb_stage.cmake with the copyright): one
# entry for this version and package revision, dated by the last commit (else now, or
# SOURCE_DATE_EPOCH), signed by the maintainer.
set(STAGEBENCH_DEB_REVISION 1)
set(STAGEBENCH_DEB_VERSION ${PROJECT_VERSION}-${STAGEBENCH_DEB_REVISION})
set(STAGEBENCH_DEB_DATE "")
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} log -1 --format=%cD
                  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE STAGEBENCH_DEB_DATE
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT STAGEBENCH_DEB_DATE)
  string(TIMESTAMP STAGEBENCH_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
if(STAGEBENCH_DESCRIBE)
  set(STAGEBENCH_DESCRIBE_OR_VERSION "commit ${STAGEBENCH_DESCRIBE}")
else()
  set(STAGEBENCH_DESCRIBE_OR_VERSION "version ${PROJECT_VERSION}")
endif()
configure_file(${CMAKE_SOURCE_DIR}/scripts/debian/changelog.in
               ${CMAKE_BINARY_DIR}/packaging/changelog.Debian @ONLY)

# Python writes bytecode beside the package when root runs a command: removed with it.
set(pycache ${CMAKE_INSTALL_PREFIX}/${STAGEBENCH_PYTHON_SITEDIR_USED}/stagebench/__pycache__)
file(WRITE ${CMAKE_BINARY_DIR}/packaging/prerm
     "#!/bin/sh\n# Removes the bytecode Python wrote beside the stagebench package.\nset -e\n"
     "rm -rf '${pycache}'\n")
file(COPY ${CMAKE_BINARY_DIR}/packaging/prerm DESTINATION ${CMAKE_BINARY_DIR}/packaging/deb
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                      WORLD_READ WORLD_EXECUTE)

# Debian: the shared libraries' packages from dpkg-shlibdeps (libhwloc15, libc6), then Python.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${STAGEBENCH_DEB_REVISION})
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3 (>= 3.6), python3-clustershell")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-matplotlib")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/packaging/deb/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# RPM (RHEL, Fedora): hwloc-libs through rpmbuild's automatic library dependencies.
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE MIT)
set(CPACK_RPM_PACKAGE_GROUP "Applications/System")
# CPack 3.25 writes no Recommends: (nor Suggests:, which it checks against rpmbuild's tag list
# under a name rpmbuild does not use): the line follows Requires: as written here.
set(CPACK_RPM_PACKAGE_REQUIRES "python3 >= 3.6, python3-clustershell\nRecommends: python3-matplotlib")
set(CPACK_RPM_PRE_UNINSTALL_SCRIPT_FILE ${CMAKE_BINARY_DIR}/packaging/prerm)
# The directories the system owns are not the package's.
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
    ${CMAKE_INSTALL_FULL_MANDIR} ${CMAKE_INSTALL_FULL_MANDIR}/man1 ${CMAKE_INSTALL_FULL_MANDIR}/man5
    ${CMAKE_INSTALL_FULL_MANDIR}/man7
    ${CMAKE_INSTALL_FULL_DATADIR}/bash-completion
    ${CMAKE_INSTALL_FULL_DATADIR}/bash-completion/completions
    ${CMAKE_INSTALL_FULL_DATAROOTDIR}/doc
    ${CMAKE_INSTALL_PREFIX}/lib ${CMAKE_INSTALL_PREFIX}/lib/python3
    ${CMAKE_INSTALL_PREFIX}/${STAGEBENCH_PYTHON_SITEDIR_USED})

# `make package_source`: the release tarball, stagebench-VERSION.tar.gz, and beside it the
# Spack recipe of that tarball (its url and sha256: spack_recipe.cmake, run after it by CPack,
# from scripts/spack/package.py.in) in a Spack repository, spack/.
set(STAGEBENCH_RELEASE_URL "" CACHE STRING
    "Where the release tarball is published, the Spack url less its name (default: file://BUILD)")
set(STAGEBENCH_HOMEPAGE "https://stagebench.example.org/" CACHE STRING
    "The project's home page, in the Spack recipe")
if(STAGEBENCH_HOMEPAGE MATCHES "^file:")
  message(FATAL_ERROR "STAGEBENCH_HOMEPAGE must be a web address, not ${STAGEBENCH_HOMEPAGE}")
endif()
string(REGEX REPLACE "/+$" "" CPACK_STAGEBENCH_RELEASE_URL "${STAGEBENCH_RELEASE_URL}")
set(CPACK_STAGEBENCH_HOMEPAGE ${STAGEBENCH_HOMEPAGE})
set(CPACK_STAGEBENCH_VERSION ${PROJECT_VERSION})
set(CPACK_STAGEBENCH_SPACK_TEMPLATE ${CMAKE_SOURCE_DIR}/scripts/spack/package.py.in)
set(CPACK_POST_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/scripts/cmake/spack_recipe.cmake)
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_PACKAGE_FILE_NAME ${CPACK_PACKAGE_NAME}-${PROJECT_VERSION})
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/" "/\\\\.git" "__pycache__" "/stage/")
include(CPack)
