/* SPDX-License-Identifier: MIT */
/*
 * Bare loop of test 1a: every thread, `passes` times, opens the file, reads it to EOF in
 * xfer pieces and closes it. Usage: seqread FILE PASSES XFER THREADS
 */
#include "bare.h"

struct seqread_args {
	const char *path;
	uint64_t passes;
	size_t xfer;
};

static void *seqread_thread(void *arg)
{
	struct bare_thread *t = arg;
	const struct seqread_args *a = t->arg;
	unsigned char *buf;
	ssize_t n;
	int fd;

	bare_pin(t->cpu);
	buf = bare_buffer(a->xfer, 0);
	bare_wait_start(t);
	for (uint64_t i = 0; i < a->passes; i++) {
		fd = open(a->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			bare_fail(t, "open", errno);
			break;
		}
		while ((n = read(fd, buf, a->xfer)) > 0)
			t->bytes += (uint64_t)n;
		if (n < 0)
			bare_fail(t, "read", errno);
		close(fd);
		t->ops++;
	}
	t->end = bare_now();
	bare_buffer_free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	struct seqread_args a;

	if (argc != 5) {
		fprintf(stderr, "usage: %s FILE PASSES XFER THREADS\n", argv[0]);
		return 2;
	}
	a.path = argv[1];
	a.passes = bare_size(argv[2]);
	a.xfer = (size_t)bare_size(argv[3]);
	return bare_main("seqread", atoi(argv[4]), seqread_thread, &a, bare_residency(a.path));
}
