/* SPDX-License-Identifier: MIT */
/*
 * Bare loop of tests 2 and 3: every thread reads COUNT chunks of CHUNK bytes at random
 * aligned offsets k*CHUNK of one shared file (opened before the start), each chunk in
 * preads of at most XFER bytes. Usage: randread FILE COUNT CHUNK XFER THREADS [SEED]
 */
#include "bare.h"

struct randread_args {
	const char *path;
	uint64_t count, chunk, nchunks, seed;
	size_t xfer;
};

static void *randread_thread(void *arg)
{
	struct bare_thread *t = arg;
	const struct randread_args *a = t->arg;
	struct bare_rng rng;
	unsigned char *buf;
	uint64_t off, done;
	size_t want;
	ssize_t n;
	int fd;

	bare_pin(t->cpu);
	buf = bare_buffer(a->xfer, 0);
	bare_rng_seed(&rng, a->seed * 1000003u + (uint64_t)t->index);
	fd = open(a->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		bare_fail(t, "open", errno);
	bare_wait_start(t);
	for (uint64_t i = 0; fd >= 0 && i < a->count; i++) {
		off = bare_rng_below(&rng, a->nchunks) * a->chunk;
		for (done = 0; done < a->chunk; done += (uint64_t)n) {
			want = a->chunk - done < a->xfer ? (size_t)(a->chunk - done) : a->xfer;
			n = pread(fd, buf, want, (off_t)(off + done));
			if (n <= 0) {
				bare_fail(t, "pread", n < 0 ? errno : EIO);
				goto out;
			}
		}
		t->bytes += a->chunk;
		t->ops++;
	}
out:
	t->end = bare_now();
	if (fd >= 0)
		close(fd);
	bare_buffer_free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	struct randread_args a;
	struct stat st;

	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: %s FILE COUNT CHUNK XFER THREADS [SEED]\n", argv[0]);
		return 2;
	}
	a.path = argv[1];
	a.count = bare_size(argv[2]);
	a.chunk = bare_size(argv[3]);
	a.xfer = (size_t)bare_size(argv[4]);
	a.seed = argc == 7 ? strtoull(argv[6], NULL, 0) : (uint64_t)time(NULL);
	if (stat(a.path, &st) != 0)
		bare_die(a.path);
	if (!a.chunk || !a.xfer || (uint64_t)st.st_size < a.chunk) {
		fprintf(stderr, "bare randread: bad chunk, xfer or file size\n");
		return 2;
	}
	a.nchunks = (uint64_t)st.st_size / a.chunk;
	return bare_main("randread", atoi(argv[5]), randread_thread, &a, bare_residency(a.path));
}
