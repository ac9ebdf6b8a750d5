/* SPDX-License-Identifier: MIT */
/*
 * The interface between the driver and the benchmark kinds. A kind is one file in workers/
 * exporting one const struct bench_ops; it gets a context, does the I/O and records counts,
 * times and the first error. It never prints, never exits and never touches another
 * thread's context. The driver owns threads, timing, aggregation and output.
 */
#ifndef STAGEBENCH_BENCH_H
#define STAGEBENCH_BENCH_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include "platform/io_error.h"
#include "util/hist.h"
#include "util/prng.h"

#define BENCH_PATH_MAX IO_ERROR_PATH_MAX
/* The pass times of 1a kept per thread beyond the first pass (struct bench_ctx.pass_ns). */
#define BENCH_PASS_TIMES 256

/* One part's parameters, decided before the release and shared read-only by all threads. */
struct bench_params {
	const char *part; /* "2a" */
	const char *path; /* the replica read by this part (read kinds) */
	const char *dir;  /* the working directory, for messages and created files */
	int dirfd;	  /* an fd of dir, for kinds that create files */
	/*
	 * The prefix of the names of the files a kind creates, unique per node, run and
	 * repetition: "stagebench.4a.n01.p12345-<token>-r1" (util/names.h). Each thread adds
	 * its own part and each file its number with names_file_thread and names_file_seq, so
	 * that `clean`, `check` and `info` recognise them whatever the kind.
	 */
	const char *name_prefix;
	uint64_t count;	     /* N: chunks (random reads) or files (many files) */
	uint64_t chunk;	     /* M: chunk or file size */
	uint64_t file_bytes; /* F: size of the replica */
	uint64_t passes;     /* passes over the replica (1a, 1b) */
	uint64_t xfer;	     /* largest single read or write */
	uint64_t generation; /* of the replica read (for --verify), or of the files written */
	long page_size;
	bool verify; /* check block headers of what is read */
	bool fsync;  /* fsync each created file before close */
	bool keep;   /* keep created files after the part */
};

struct bench_ctx {
	const struct bench_params *p;
	unsigned thread; /* thread index on this node */
	struct prng rng; /* seeded from (seed, node, thread) by the driver */
	void *buf; /* p->xfer bytes at the node's placement (bufplace.h), touched before the release
		    */
	struct hist *lat;	  /* per-operation latency, owned by the driver */
	const volatile int *stop; /* non-zero: another thread failed or a signal came; stop soon */
	void *priv;		  /* kind-private state between setup, run and teardown */

	/* Results, written by the thread that owns the context. */
	uint64_t bytes;	     /* bytes read or written in the timed window */
	uint64_t ops;	     /* operations completed: passes, chunks, files */
	uint64_t pages;	     /* pages touched (mmap) */
	uint64_t files;	     /* files created (many files) */
	uint64_t retries;    /* short transfers and EINTR retried */
	uint64_t sum;	     /* touched bytes folded together, so no loop is optimized away */
	bool stopped;	     /* run ended early because *stop was set */
	struct io_error err; /* valid when run/setup returned non-zero */

	/* Published for a progress reporter (relaxed stores by the owner, relaxed loads). */
	_Atomic uint64_t live_bytes;
	_Atomic uint64_t live_ops;

	/*
	 * When the timed work began: clock_mono_ns() read by run once, just before its first
	 * operation (every kind, null included), so the driver can give the spread of the
	 * first I/O instants beside the release spread. 0: run was not called. Set even when
	 * that first operation then failed or found the stop flag set.
	 */
	uint64_t first_io_ns;
	/*
	 * 1a (seqread): the first pass, which may come from the server while the others come
	 * from this node's cache, apart from the rest. first_pass_ns: the first completed pass,
	 * open to close, in ns (0: none completed). pass_ns[0..npass_ns): the following passes in
	 * order, at most BENCH_PASS_TIMES of them (the spec's 64 fit); passes_not_kept counts
	 * completed passes beyond that, which are in c->lat only. bench_median_ns() gives the
	 * median of the kept ones, per thread or over a node's threads gathered together.
	 */
	uint64_t first_pass_ns;
	uint64_t npass_ns;
	uint64_t passes_not_kept;
	uint64_t pass_ns[BENCH_PASS_TIMES];
};

/*
 * What a kind does, declared on its ops so that the driver decides preflight, messages and
 * checks from these flags and never from the kind's name.
 */
enum bench_cap {
	BENCH_WRITES_FILES = 1u << 0,  /* creates count files of chunk bytes per thread in p->dir */
	BENCH_READS_REPLICA = 1u << 1, /* reads the replica p->path */
	BENCH_MAPS_REPLICA = 1u << 2,  /* reads it through mmap: verification sees whole pages */
	BENCH_VERIFY_XFER =
	    1u << 3, /* verifies each read of xfer bytes: xfer must be whole blocks */
};

/*
 * What a kind's rate counts, declared on its ops: the "counted" and "rate_unit" of the catalogue
 * and of the node summary's parts (bench_unit_counted, bench_unit_rate). 0, the default of a
 * kind that does not say, is operations.
 */
enum bench_unit {
	BENCH_UNIT_OPS = 0,	  /* "operations", "ops/s" */
	BENCH_UNIT_BYTES_READ,	  /* "bytes read", "B/s" */
	BENCH_UNIT_BYTES_WRITTEN, /* "bytes written", "B/s" */
	BENCH_UNIT_PAGES,	  /* "pages touched", "pages/s" */
	BENCH_UNIT_COUNT
};

/*
 * The part parameters whose product a count of a kind is (bits of struct bench_expect): the
 * catalogue's "expect" names them as the summary does.
 */
enum bench_by {
	BENCH_BY_COUNT = 1u << 0,  /* N: "count" */
	BENCH_BY_CHUNK = 1u << 1,  /* M: "chunk_bytes" */
	BENCH_BY_FILE = 1u << 2,   /* F: "file_bytes" */
	BENCH_BY_PASSES = 1u << 3, /* "passes" */
};

/*
 * What one thread of a kind counts in a part it completes, declared on its ops: each count the
 * product of the part's parameters its bits name (BENCH_BY_*), 0 when the kind counts none.
 * The collector checks every summary's ops, bytes and files against them (the catalogue's
 * "expect"), so a summary whose counts are not the plan's is told apart.
 */
struct bench_expect {
	unsigned ops, bytes, files;
};

struct bench_ops {
	const char *name;	    /* the kind's name: "seqread" */
	const char *what;	    /* one line for `list` */
	unsigned caps;		    /* enum bench_cap flags */
	enum bench_unit unit;	    /* what its rate counts */
	struct bench_expect expect; /* what a thread counts in a completed part */
	/*
	 * In the thread, after it is pinned and before the ready barrier: open files, set up
	 * private state. Must not do timed work. NULL: nothing to do. 0 or -errno (c->err set).
	 */
	int (*setup)(struct bench_ctx *c);
	/*
	 * The timed work, from the release on. Records one latency sample per operation in
	 * c->lat, counts in c->bytes/ops/..., publishes progress in c->live_*, checks *c->stop
	 * between operations (sets c->stopped and returns 0 when it stops early). Returns 0 or
	 * -errno after filling c->err with the first error.
	 */
	int (*run)(struct bench_ctx *c);
	/*
	 * After the timed window, whatever run returned, when setup succeeded: close files,
	 * remove created files unless p->keep. NULL: nothing to do. Never fails the part.
	 */
	void (*teardown)(struct bench_ctx *c);
};

/*
 * Whether the stop flag is set. Another thread sets it while this one runs, so it is read
 * as a relaxed atomic load (a plain load on common CPUs): a volatile read alone would be a
 * data race for C11 and ThreadSanitizer. Whoever sets the flag from a thread should store
 * it the same way, __atomic_store_n(&flag, 1, __ATOMIC_RELAXED).
 */
static inline bool bench_should_stop(const volatile int *stop)
{
	return __atomic_load_n(stop, __ATOMIC_RELAXED) != 0;
}

/* The three transfers of the kinds: read at the file position, pread at an offset, write. */
enum bench_io { BENCH_IO_READ, BENCH_IO_PREAD, BENCH_IO_WRITE };

/*
 * Transfer want bytes between fd and buf (pread at off; off is ignored otherwise), retrying
 * EINTR and short transfers, each counted in c->retries. *got: the bytes transferred, fewer
 * than want only at the end of the file of a read (the return is then 0), or when it fails.
 * 0 or -errno; a write of 0 bytes, which would repeat forever, is -EIO. Inlined: io is a
 * constant at each call, so a kind's loop keeps its one system call.
 */
static inline __attribute__((always_inline)) int bench_io_full(struct bench_ctx *c,
							       enum bench_io io, int fd, void *buf,
							       size_t want, uint64_t off,
							       size_t *got)
{
	unsigned char *b = buf;
	ssize_t n;

	*got = 0;
	while (*got < want) {
		if (io == BENCH_IO_READ)
			n = read(fd, b + *got, want - *got);
		else if (io == BENCH_IO_PREAD)
			n = pread(fd, b + *got, want - *got, (off_t)(off + *got));
		else
			n = write(fd, b + *got, want - *got);
		if (n > 0) {
			*got += (size_t)n;
			if (*got < want)
				c->retries++;
			continue;
		}
		if (n == 0)
			return io == BENCH_IO_WRITE ? -EIO : 0;
		if (errno != EINTR)
			return -errno;
		c->retries++;
	}
	return 0;
}

/* Whether the context must stop now; if so, c->stopped is set (the kind then ends with 0). */
static inline bool bench_stopping(struct bench_ctx *c)
{
	if (!bench_should_stop(c->stop))
		return false;
	c->stopped = true;
	return true;
}

/* What unit counts ("bytes read") and its rate's unit ("B/s"); "?" beyond the table. */
const char *bench_unit_counted(enum bench_unit unit);
const char *bench_unit_rate(enum bench_unit unit);

/*
 * The words of the table, each once, NULL-terminated in words (room: BENCH_UNIT_COUNT + 1):
 * what is counted (rate false) or the rates' units (true), in the catalogue's order (what is
 * moved or touched first, operations last), which is the order a reader's message lists them
 * in. Returns how many.
 */
size_t bench_unit_words(bool rate, const char **words, size_t room);

/* Record the first error of a context (later calls are ignored). Returns -errnum. */
int bench_fail(struct bench_ctx *c, const char *op, const char *path, int errnum);

/* The teardown of a kind whose private state is one allocation: freed, c->priv NULL. */
void bench_teardown_free(struct bench_ctx *c);
int bench_fail_at(struct bench_ctx *c, const char *op, const char *path, uint64_t offset,
		  int errnum);

/*
 * A verification failure at offset: op "verify", errnum EBADMSG (not a stagebench block) or
 * ESTALE (a stagebench block of another generation or offset; the generations are recorded).
 * First error wins, as above. Returns -errnum.
 */
int bench_fail_verify(struct bench_ctx *c, const char *path, uint64_t offset, int errnum,
		      uint64_t expected_gen, uint64_t found_gen);

/*
 * The median of n times (sorted in place): the middle one, or the mean of the two middle ones
 * (rounded down) when n is even; 0 when n is 0. For the driver: a thread's pass_ns, or all of
 * a node's threads' pass_ns copied into one array, give "the median of the other passes".
 */
uint64_t bench_median_ns(uint64_t *v, size_t n);

#endif
