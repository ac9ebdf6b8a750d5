/* SPDX-License-Identifier: MIT */
/*
 * The `list` command: the catalogue.
 */
#ifndef STAGEBENCH_LISTCMD_H
#define STAGEBENCH_LISTCMD_H

#include <stdio.h>

#include "driver/options.h"

/* The catalogue at scale ("stagebench.catalogue/1" in JSON). 0, or -EIO when writing failed. */
int listcmd_print(enum scale scale, enum format format, FILE *f);

#endif
