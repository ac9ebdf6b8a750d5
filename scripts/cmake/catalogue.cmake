# SPDX-License-Identifier: MIT
# cmake -DBINARY=stagebench -DOUT=catalogue.json -P catalogue.cmake: the binary's test catalogue
# (`stagebench list --format json`) written to OUT, failing the build when the binary fails.
execute_process(COMMAND ${BINARY} list --format json OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${BINARY} list --format json failed (${rc})")
endif()
file(RENAME ${OUT}.tmp ${OUT})
