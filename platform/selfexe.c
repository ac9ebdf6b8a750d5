/* SPDX-License-Identifier: MIT */
/*
 * The running executable's digest, read through /proc/self/exe.
 */
#include "platform/selfexe.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define SELFEXE_PATH "/proc/self/exe"

int selfexe_digest(char hex[SHA256_HEX])
{
	unsigned char buf[65536], d[SHA256_BYTES];
	struct sha256 s;
	ssize_t n;
	int fd, rc = 0;

	hex[0] = '\0';
	fd = open(SELFEXE_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	sha256_init(&s);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		sha256_update(&s, buf, (size_t)n);
	}
	sha256_final(&s, d);
	sha256_hex(d, hex);
out:
	close(fd);
	return rc;
}
