/* SPDX-License-Identifier: MIT */
/*
 * stagebench-completion: prints the bash completion script of stagebench (generated from
 * the option table). Run at build time; the script is installed, this program is not.
 */
#include <stdio.h>

#include "driver/options.h"

int main(void)
{
	options_completion(stdout);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
