# SPDX-License-Identifier: MIT
# CPack's step after it made the packages (CPACK_POST_BUILD_SCRIPTS): when one of them is the
# release tarball (`make package_source`), the Spack recipe of that tarball, its url and
# sha256, from scripts/spack/package.py.in, as a Spack repository where the tarball goes:
# spack/repo.yaml and spack/packages/stagebench/package.py.
foreach(tarball ${CPACK_PACKAGE_FILES})
  get_filename_component(name "${tarball}" NAME)
  if(NOT name STREQUAL "stagebench-${CPACK_STAGEBENCH_VERSION}.tar.gz")
    continue()
  endif()
  set(dir "${CPACK_PACKAGE_DIRECTORY}")  # where CPack puts the tarball next (this one is staged)
  file(SHA256 "${tarball}" STAGEBENCH_TARBALL_SHA256)
  set(PROJECT_VERSION "${CPACK_STAGEBENCH_VERSION}")
  set(STAGEBENCH_HOMEPAGE "${CPACK_STAGEBENCH_HOMEPAGE}")
  set(STAGEBENCH_RELEASE_URL "${CPACK_STAGEBENCH_RELEASE_URL}")
  if(NOT STAGEBENCH_RELEASE_URL)
    set(STAGEBENCH_RELEASE_URL "file://${dir}")
  endif()
  set(repo "${dir}/spack")
  configure_file("${CPACK_STAGEBENCH_SPACK_TEMPLATE}" "${repo}/packages/stagebench/package.py"
                 @ONLY)
  file(WRITE "${repo}/repo.yaml" "repo:\n  namespace: stagebench\n")
  message(STATUS "Spack recipe of ${name} (sha256 ${STAGEBENCH_TARBALL_SHA256}): "
                 "${repo}/packages/stagebench/package.py")
endforeach()
