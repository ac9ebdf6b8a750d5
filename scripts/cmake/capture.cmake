# SPDX-License-Identifier: MIT
# cmake -DCOMMAND=prog;arg... -DOUT=file -P capture.cmake: the standard output of COMMAND
# written to OUT (through OUT.tmp and a rename), failing the build when COMMAND fails.
execute_process(COMMAND ${COMMAND} OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${COMMAND} failed (${rc})")
endif()
file(RENAME ${OUT}.tmp ${OUT})
