/* SPDX-License-Identifier: MIT */
/*
 * The identity of the executable that runs, from its content: the SHA-256 of /proc/self/exe,
 * so that a binary patched or rebuilt after its build id was fixed is told apart.
 */
#ifndef STAGEBENCH_SELFEXE_H
#define STAGEBENCH_SELFEXE_H

#include "util/sha256.h"

/*
 * The SHA-256 of the running executable (/proc/self/exe: the file this process was started
 * from, even if its name was since replaced), in lower-case hex. 0, or -errno (hex is then
 * ""). Reads the whole file: call it before anything is timed.
 */
int selfexe_digest(char hex[SHA256_HEX]);

#endif
