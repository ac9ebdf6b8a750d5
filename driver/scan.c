/* SPDX-License-Identifier: MIT */
/*
 * stagebench-scan: the collector's fast door as a program. It reads NUL-terminated summary
 * paths on its standard input and prints JSCAN_MAGIC, then a record a path, in order: 'D' and
 * the scanned summary (util/jscan.h), or 'S' where the collector reads the file itself (it
 * cannot be opened or read, is not a regular file, is too large or grew, or jscan declined it).
 * stagebench-collect runs it; its output is no one else's.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/jscan.h"
#include "util/log.h"

/* The collector's bound of a file (summaries.py MAX_FILE_BYTES). */
#define SCAN_MAX_FILE_BYTES (64 << 20)
#define SCAN_MAX_TOP	    16
#define SCAN_FLUSH_BYTES    (1 << 20)

static int scan_write_all(const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The whole of the file at path in *text (*len bytes): 0, or -1 where the collector reads it. */
static int scan_read(const char *path, char **text, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int rc = -1;
	/* as the collector opens it: a FIFO must not hold the reader */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > SCAN_MAX_FILE_BYTES ||
	    st.st_size == 0)
		goto out;
	size_t want = (size_t)st.st_size + 1; /* a byte more shows a file that grew */
	buf = malloc(want);
	if (!buf)
		goto out;
	while (got < want) {
		ssize_t r = read(fd, buf + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto out;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got != (size_t)st.st_size)
		goto out;
	*text = buf;
	*len = got;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	struct jscan_buf out = {0};
	char *path = NULL;
	size_t cap = 0;
	unsigned top = 5;
	int rc = 0;

	if (argc == 3 && strcmp(argv[1], "--top") == 0 && argv[2][0] >= '0' && argv[2][0] <= '9' &&
	    strtoul(argv[2], NULL, 10) <= SCAN_MAX_TOP) {
		top = (unsigned)strtoul(argv[2], NULL, 10);
	} else if (argc != 1) {
		log_err("usage: stagebench-scan [--top N] < NUL-terminated summary paths");
		return 2;
	}
	/*
	 * Each summary's buffers (its text, tens of KiB; the scan's own) are freed before the next
	 * is read: kept by malloc rather than handed back to the kernel and faulted in again, a
	 * page fault a file and a third of the program's system time.
	 */
	mallopt(M_TRIM_THRESHOLD, SCAN_MAX_FILE_BYTES);
	if (scan_write_all((const unsigned char *)JSCAN_MAGIC, strlen(JSCAN_MAGIC)) != 0)
		return 1;
	for (;;) {
		ssize_t n = getdelim(&path, &cap, '\0', stdin);
		if (n <= 0)
			break;
		if (path[n - 1] == '\0')
			n--;
		path[n] = '\0';
		char *text = NULL;
		size_t len = 0;
		int r = scan_read(path, &text, &len);
		if (r == 0)
			r = jscan_summary(text, len, top, &out);
		free(text);
		if (r == -ENOMEM) {
			log_err("out of memory");
			rc = 1;
			break;
		}
		if (r != 0 && jscan_buf_put(&out, "S", 1) != 0) {
			log_err("out of memory");
			rc = 1;
			break;
		}
		if (out.len >= SCAN_FLUSH_BYTES) {
			if (scan_write_all(out.p, out.len) != 0) {
				rc = 1;
				break;
			}
			out.len = 0;
		}
	}
	if (rc == 0 && out.len && scan_write_all(out.p, out.len) != 0)
		rc = 1;
	jscan_buf_free(&out);
	free(path);
	return rc;
}
