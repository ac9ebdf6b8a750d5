/* SPDX-License-Identifier: MIT */
/*
 * Bare loop of test 4: every thread creates COUNT new files of SIZE bytes in DIR
 * (O_CREAT|O_EXCL|O_NOFOLLOW), writes them in pieces of at most XFER bytes from a buffer
 * filled before the start, and closes them. Nothing is removed: the caller removes DIR.
 * Usage: createfiles DIR COUNT SIZE XFER THREADS
 */
#include "bare.h"

struct createfiles_args {
	int dirfd;
	uint64_t count, size;
	size_t xfer;
};

static void *createfiles_thread(void *arg)
{
	struct bare_thread *t = arg;
	const struct createfiles_args *a = t->arg;
	unsigned char *buf;
	char name[64];
	uint64_t done;
	size_t want;
	ssize_t n;
	int fd;

	bare_pin(t->cpu);
	buf = bare_buffer(a->xfer, 0x5a);
	bare_wait_start(t);
	for (uint64_t i = 0; i < a->count; i++) {
		/* Names built in the loop, as cheaply as stagebench builds its own. */
		snprintf(name, sizeof(name), "bare.t%d.%06llu", t->index, (unsigned long long)i);
		fd = openat(a->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0644);
		if (fd < 0) {
			bare_fail(t, "create", errno);
			break;
		}
		for (done = 0; done < a->size; done += (uint64_t)n) {
			want = a->size - done < a->xfer ? (size_t)(a->size - done) : a->xfer;
			n = write(fd, buf, want);
			if (n <= 0) {
				bare_fail(t, "write", n < 0 ? errno : EIO);
				close(fd);
				goto out;
			}
		}
		if (close(fd) != 0) {
			bare_fail(t, "close", errno);
			break;
		}
		t->bytes += a->size;
		t->files++;
		t->ops++;
	}
out:
	t->end = bare_now();
	bare_buffer_free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	struct createfiles_args a;

	if (argc != 6) {
		fprintf(stderr, "usage: %s DIR COUNT SIZE XFER THREADS\n", argv[0]);
		return 2;
	}
	a.dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (a.dirfd < 0)
		bare_die(argv[1]);
	a.count = bare_size(argv[2]);
	a.size = bare_size(argv[3]);
	a.xfer = (size_t)bare_size(argv[4]);
	if (!a.xfer) {
		fprintf(stderr, "bare createfiles: xfer must be positive\n");
		return 2;
	}
	return bare_main("createfiles", atoi(argv[5]), createfiles_thread, &a, -1.0);
}
