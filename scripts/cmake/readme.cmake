# SPDX-License-Identifier: MIT
# cmake -DIN=README.md -DOUT=FILE -P readme.cmake: the README that is installed beside the
# package's docs: its links to the man pages' Markdown sources (scripts/man/NAME.S.md, which
# are not installed) become the pages' plain names, "stagebench-run(1)", which `man` opens.
file(READ ${IN} text)
string(REGEX REPLACE "\\[([^]\n]+)\\]\\(scripts/man/[^)\n]+\\.md\\)" "\\1" text "${text}")
string(REGEX MATCH "\\]\\(scripts/man/[^)\n]*\\)" left "${text}")
if(left)
  message(FATAL_ERROR "readme.cmake: a link to scripts/man/ is left in ${IN}: ${left}")
endif()
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
