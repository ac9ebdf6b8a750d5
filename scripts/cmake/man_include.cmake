# SPDX-License-Identifier: MIT
# cmake -DBINARY=stagebench -DOUT=stagebench.h2m -P man_include.cmake: the help2man include
# file of stagebench(1): a COMMANDS section with every command's --help (generated from the
# option table like the general one), and SEE ALSO the cluster commands.
set(text "[COMMANDS]\n")
foreach(cmd run prepare clean list info check)
  execute_process(COMMAND ${BINARY} ${cmd} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${BINARY} ${cmd} --help failed (${rc})")
  endif()
  # roff: a backslash is \e, a line may not start with . or '
  string(REPLACE "\\" "\\e" help "${help}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
  string(APPEND text ".SS \"stagebench ${cmd}\"\n.nf\n${help}.fi\n")
endforeach()
string(APPEND text "[SEE ALSO]\n.BR stagebench-cluster (1),\n.BR stagebench-collect (1),\n"
                   ".BR stagebench-cron (1),\n.BR stagebench-sim (1)\n")
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
