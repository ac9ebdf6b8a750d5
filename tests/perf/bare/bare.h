/* SPDX-License-Identifier: MIT */
/*
 * What the bare loops of tests/perf share: one thread per CPU pinned with
 * pthread_setaffinity_np, buffers allocated and touched before the start, a start instant
 * that every thread spins for (as stagebench does), and one JSON line of results. These
 * are the yardsticks for stagebench's workers: the same system calls, nothing else.
 */
#ifndef BARE_H
#define BARE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np, CPU_SET */
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BARE_MAX_THREADS 64
/*
 * The start instant is this far after every thread is ready (environment BARE_START_IN,
 * seconds: the perf script gives the same lead as stagebench's --start-in); the last 2 ms
 * are spun.
 */
#define BARE_LEAD_NS 20000000ull
#define BARE_SPIN_NS 2000000ull

struct bare_run;

struct bare_thread {
	struct bare_run *run;
	pthread_t tid;
	int index;
	int cpu;
	void *arg;	  /* the loop's shared parameters */
	uint64_t release; /* CLOCK_MONOTONIC ns */
	uint64_t end;
	uint64_t bytes, ops, pages, files, sum;
	int err;
	char errmsg[256];
};

struct bare_run {
	int nthreads;
	pthread_barrier_t ready;
	volatile uint64_t start_ns; /* set by the main thread between the two barriers */
	pthread_barrier_t go;
	struct bare_thread t[BARE_MAX_THREADS];
};

static inline uint64_t bare_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void bare_die(const char *what)
{
	fprintf(stderr, "bare: %s: %s\n", what, strerror(errno));
	exit(1);
}

static inline void bare_fail(struct bare_thread *t, const char *what, int e)
{
	if (!t->err) {
		t->err = e ? e : EIO;
		snprintf(t->errmsg, sizeof(t->errmsg), "%s: %s", what, strerror(t->err));
	}
}

/* Pin the calling thread to one CPU. */
static inline void bare_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
		errno = EINVAL;
		bare_die("pthread_setaffinity_np");
	}
}

/*
 * The buffer's offset from a page boundary: environment BARE_BUFFER_OFFSET, bytes (default 0,
 * page-aligned), the same placement switch as stagebench's --buffer-offset.
 */
static inline size_t bare_offset(void)
{
	const char *s = getenv("BARE_BUFFER_OFFSET");

	return s ? (size_t)strtoull(s, NULL, 10) : 0;
}

/*
 * A buffer at the placement above, touched now so that no first-touch fault lands in the
 * timed loop. Free it with bare_buffer_free().
 */
static inline void *bare_buffer(size_t len, int fill)
{
	size_t off = bare_offset();
	void *p = NULL;

	if (posix_memalign(&p, 4096, len + off ? len + off : 1) != 0)
		bare_die("posix_memalign");
	memset((char *)p + off, fill, len);
	return (char *)p + off;
}

static inline void bare_buffer_free(void *buf)
{
	free((char *)buf - bare_offset());
}

/* Called by each thread once its set-up is done: wait for the others, then for the start. */
static inline void bare_wait_start(struct bare_thread *t)
{
	struct bare_run *r = t->run;
	uint64_t now;

	pthread_barrier_wait(&r->ready);
	pthread_barrier_wait(&r->go);
	for (;;) {
		now = bare_now();
		if (now >= r->start_ns)
			break;
		if (r->start_ns - now > BARE_SPIN_NS) {
			struct timespec ts = {0, (long)(r->start_ns - now - BARE_SPIN_NS)};
			nanosleep(&ts, NULL);
		}
	}
	t->release = now;
}

/* xoshiro256** seeded through splitmix64, and Lemire's unbiased bounded draw. */
struct bare_rng {
	uint64_t s[4];
};

static inline uint64_t bare_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void bare_rng_seed(struct bare_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = bare_splitmix(&seed);
}

static inline uint64_t bare_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t bare_rng_next(struct bare_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = bare_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = bare_rotl(s[3], 45);
	return res;
}

static inline uint64_t bare_rng_below(struct bare_rng *r, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)bare_rng_next(r) * n;
	uint64_t low = (uint64_t)m, threshold;

	if (low < n) {
		threshold = -n % n;
		while (low < threshold) {
			m = (unsigned __int128)bare_rng_next(r) * n;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

/* Fraction of a file's pages in the page cache (mincore), or -1. */
static inline double bare_residency(const char *path)
{
	long page = sysconf(_SC_PAGESIZE);
	struct stat st;
	unsigned char *vec;
	size_t pages, in = 0;
	void *m;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
		if (fd >= 0)
			close(fd);
		return -1.0;
	}
	pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	vec = malloc(pages);
	if (m == MAP_FAILED || !vec || mincore(m, (size_t)st.st_size, vec) != 0) {
		if (m != MAP_FAILED)
			munmap(m, (size_t)st.st_size);
		free(vec);
		close(fd);
		return -1.0;
	}
	for (size_t i = 0; i < pages; i++)
		in += vec[i] & 1;
	munmap(m, (size_t)st.st_size);
	free(vec);
	close(fd);
	return (double)in / (double)pages;
}

/*
 * Start n threads (thread i pinned to CPU i) running fn, release them together at one
 * instant, join them and print one JSON line: the node time (last end - start instant),
 * the counts summed over threads, and the residency measured before the start.
 */
static inline int bare_main(const char *kind, int n, void *(*fn)(void *), void *arg,
			    double residency)
{
	static struct bare_run r;
	uint64_t last = 0, bytes = 0, ops = 0, pages = 0, files = 0, sum = 0, rmin = UINT64_MAX,
		 rmax = 0;
	int rc = 0;

	if (n < 1 || n > BARE_MAX_THREADS) {
		fprintf(stderr, "bare: bad thread count %d\n", n);
		return 2;
	}
	r.nthreads = n;
	pthread_barrier_init(&r.ready, NULL, (unsigned)n + 1);
	pthread_barrier_init(&r.go, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		r.t[i].run = &r;
		r.t[i].index = i;
		r.t[i].cpu = i;
		r.t[i].arg = arg;
		if (pthread_create(&r.t[i].tid, NULL, fn, &r.t[i]) != 0)
			bare_die("pthread_create");
	}
	const char *lead = getenv("BARE_START_IN");
	uint64_t lead_ns = lead ? (uint64_t)(atof(lead) * 1e9) : BARE_LEAD_NS;

	pthread_barrier_wait(&r.ready);
	r.start_ns = bare_now() + lead_ns;
	pthread_barrier_wait(&r.go);
	for (int i = 0; i < n; i++) {
		struct bare_thread *t = &r.t[i];

		pthread_join(t->tid, NULL);
		if (t->err) {
			fprintf(stderr, "bare %s thread %d: %s\n", kind, i, t->errmsg);
			rc = 1;
		}
		last = t->end > last ? t->end : last;
		rmin = t->release < rmin ? t->release : rmin;
		rmax = t->release > rmax ? t->release : rmax;
		bytes += t->bytes;
		ops += t->ops;
		pages += t->pages;
		files += t->files;
		sum += t->sum;
	}
	printf("{\"thread_time_s\": [");
	for (int i = 0; i < n; i++)
		printf("%s%.9f", i ? ", " : "", (double)(r.t[i].end - r.t[i].release) / 1e9);
	printf("], ");
	printf("\"kind\": \"%s\", \"threads\": %d, \"node_time_s\": %.9f, "
	       "\"release_spread_s\": %.9f, \"bytes\": %llu, \"ops\": %llu, \"pages\": %llu, "
	       "\"files\": %llu, \"residency\": %.6f, \"sum\": %llu}\n",
	       kind, n, (double)(last - r.start_ns) / 1e9, (double)(rmax - rmin) / 1e9,
	       (unsigned long long)bytes, (unsigned long long)ops, (unsigned long long)pages,
	       (unsigned long long)files, residency, (unsigned long long)sum);
	return rc;
}

static inline uint64_t bare_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		break;
	default:
		break;
	}
	return (uint64_t)v;
}

#endif
