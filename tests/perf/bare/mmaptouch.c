/* SPDX-License-Identifier: MIT */
/*
 * Bare loop of test 1b: every thread, `passes` times, opens the file, maps it read-only,
 * reads one byte of every page in order, unmaps it and closes it.
 * Usage: mmaptouch FILE PASSES THREADS
 */
#include "bare.h"

struct mmaptouch_args {
	const char *path;
	uint64_t passes;
	size_t len;
	size_t page;
};

static void *mmaptouch_thread(void *arg)
{
	struct bare_thread *t = arg;
	const struct mmaptouch_args *a = t->arg;
	const unsigned char *m;
	uint64_t sum = 0;
	int fd;

	bare_pin(t->cpu);
	bare_wait_start(t);
	for (uint64_t i = 0; i < a->passes; i++) {
		fd = open(a->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			bare_fail(t, "open", errno);
			break;
		}
		m = mmap(NULL, a->len, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			bare_fail(t, "mmap", errno);
			close(fd);
			break;
		}
		for (size_t off = 0; off < a->len; off += a->page)
			sum += m[off];
		munmap((void *)m, a->len);
		close(fd);
		t->pages += (a->len + a->page - 1) / a->page;
		t->bytes += a->len;
		t->ops++;
	}
	t->end = bare_now();
	t->sum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	struct mmaptouch_args a;
	struct stat st;

	if (argc != 4) {
		fprintf(stderr, "usage: %s FILE PASSES THREADS\n", argv[0]);
		return 2;
	}
	a.path = argv[1];
	a.passes = bare_size(argv[2]);
	a.page = (size_t)sysconf(_SC_PAGESIZE);
	if (stat(a.path, &st) != 0)
		bare_die(a.path);
	a.len = (size_t)st.st_size;
	return bare_main("mmaptouch", atoi(argv[3]), mmaptouch_thread, &a, bare_residency(a.path));
}
