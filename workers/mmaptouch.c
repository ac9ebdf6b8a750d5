/* SPDX-License-Identifier: MIT */
/*
 * Test 1b: `passes` times, open the replica, map it read-only, read one byte of every page
 * in order, unmap and close, all inside the timed window. One operation is one pass. A
 * SIGBUS from a page the file no longer covers becomes an error of the part, not a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform/clock.h"
#include "util/pattern.h"
#include "workers/bench.h"

/* Progress is published, and the stop flag looked at, after every this many pages. */
#define MMAPTOUCH_BATCH 256

struct mmaptouch_priv {
	size_t len;    /* the mapping: p->file_bytes */
	size_t npages; /* pages it spans (the last one may be partial) */
	/* All passes, with or without verification: chosen in setup. */
	int (*loop)(struct bench_ctx *c, const struct mmaptouch_priv *s);
};

/*
 * Per thread, what the SIGBUS handler needs: where to jump, and the mapping being touched
 * (base is non-NULL exactly while a touch loop runs over it). A fault elsewhere, or while
 * no loop runs, is not ours. Thread-local, since a fault is delivered to the thread that
 * caused it; volatile, since the handler reads it asynchronously.
 */
struct mmaptouch_guard {
	sigjmp_buf jb;
	const unsigned char *volatile base;
	volatile size_t len;
	volatile int fd;
	const unsigned char *volatile fault;
};

static _Thread_local struct mmaptouch_guard mmaptouch_guard;
static pthread_once_t mmaptouch_once = PTHREAD_ONCE_INIT;
static int mmaptouch_once_err;

/*
 * A SIGBUS inside a guarded mapping means the file shrank under it (or the server lost the
 * data): jump back to mmaptouch_run, which reports it. Anything else gets the default
 * action, as if this handler had never been installed: a genuine bug must still crash.
 */
static void mmaptouch_sigbus(int sig, siginfo_t *si, void *uctx)
{
	struct mmaptouch_guard *g = &mmaptouch_guard;
	uintptr_t base = (uintptr_t)g->base;
	uintptr_t addr = (uintptr_t)si->si_addr;
	struct sigaction dfl;

	(void)uctx;
	if (base && si->si_code > 0 && addr >= base && addr - base < g->len) {
		g->fault = si->si_addr;
		siglongjmp(g->jb, 1);
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
}

static void mmaptouch_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = mmaptouch_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) != 0)
		mmaptouch_once_err = errno;
}

/*
 * One pass. Inlined into two variants so that the verify test disappears from the loop.
 * The touched bytes are summed into c->sum: a result that is stored cannot be optimized
 * away, so every page really is faulted in, without making the loads volatile.
 */
static inline __attribute__((always_inline)) int
mmaptouch_pass(struct bench_ctx *c, const struct mmaptouch_priv *s, const bool verify)
{
	const struct bench_params *p = c->p;
	struct mmaptouch_guard *g = &mmaptouch_guard;
	const size_t page = (size_t)p->page_size;
	const size_t block_mask = ~(size_t)(PATTERN_BLOCK - 1);
	const unsigned char *base;
	uint64_t sum = 0, t0, bad, found;
	size_t i, first, end, off, n;
	void *m;
	int fd, rc = 0;

	t0 = clock_mono_ns();
	fd = open(p->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return bench_fail(c, "open", p->path, errno);
	m = mmap(NULL, s->len, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		rc = bench_fail(c, "mmap", p->path, errno);
		goto out;
	}
	base = m;
	g->fd = fd;
	g->len = s->len;
	g->base = base;
	atomic_signal_fence(memory_order_seq_cst);
	for (first = 0; first < s->npages; first = end) {
		end = s->npages - first > MMAPTOUCH_BATCH ? first + MMAPTOUCH_BATCH : s->npages;
		for (i = first; i < end; i++) {
			off = i * page;
			sum += base[off];
			if (verify) {
				/* Every block header of the page; a last partial page has fewer. */
				n = (s->len - off < page ? s->len - off : page) & block_mask;
				rc = pattern_check_range(base + off, n, p->generation, off, &bad,
							 &found);
				if (rc) {
					rc = bench_fail_verify(c, p->path, bad, rc, p->generation,
							       found);
					goto out;
				}
			}
		}
		c->pages += end - first;
		c->bytes += (end * page < s->len ? end * page : s->len) - first * page;
		atomic_store_explicit(&c->live_bytes, c->bytes, memory_order_relaxed);
		if (bench_stopping(c))
			break;
	}
out:
	atomic_signal_fence(memory_order_seq_cst);
	g->base = NULL;
	atomic_signal_fence(memory_order_seq_cst);
	if (m != MAP_FAILED)
		munmap(m, s->len);
	close(fd);
	g->fd = -1;
	c->sum += sum;
	if (rc == 0 && !c->stopped) {
		hist_record(c->lat, clock_mono_ns() - t0);
		c->ops++;
		atomic_store_explicit(&c->live_ops, c->ops, memory_order_relaxed);
	}
	return rc;
}

static inline __attribute__((always_inline)) int
mmaptouch_loop(struct bench_ctx *c, const struct mmaptouch_priv *s, const bool verify)
{
	uint64_t i;
	int rc;

	for (i = 0; i < c->p->passes; i++) {
		if (bench_stopping(c))
			return 0;
		rc = mmaptouch_pass(c, s, verify);
		if (rc || c->stopped)
			return rc;
	}
	return 0;
}

static int mmaptouch_loop_plain(struct bench_ctx *c, const struct mmaptouch_priv *s)
{
	return mmaptouch_loop(c, s, false);
}

static int mmaptouch_loop_verify(struct bench_ctx *c, const struct mmaptouch_priv *s)
{
	return mmaptouch_loop(c, s, true);
}

/*
 * Where the handler lands: the pass that faulted is abandoned, its mapping unmapped and
 * its file closed. The error is EFAULT ("bad address"), op "touch", at the offset of the
 * faulting address in the file: the closest errno to "the page is not backed by the file".
 */
static int mmaptouch_faulted(struct bench_ctx *c, const struct mmaptouch_priv *s)
{
	struct mmaptouch_guard *g = &mmaptouch_guard;
	const unsigned char *base = g->base;
	uint64_t off = (uint64_t)(g->fault - base);

	g->base = NULL;
	atomic_signal_fence(memory_order_seq_cst);
	munmap((void *)base, s->len);
	close(g->fd);
	g->fd = -1;
	return bench_fail_at(c, "touch", c->p->path, off, EFAULT);
}

/*
 * The jump buffer is set once per run, not per pass or page: sigsetjmp saves the signal
 * mask with a system call, which does not belong in the timed loop more often than that.
 */
static int mmaptouch_run(struct bench_ctx *c)
{
	struct mmaptouch_guard *g = &mmaptouch_guard;

	g->base = NULL;
	g->fd = -1;
	if (sigsetjmp(g->jb, 1) != 0)
		return mmaptouch_faulted(c, c->priv);
	c->first_io_ns = clock_mono_ns();
	return ((const struct mmaptouch_priv *)c->priv)->loop(c, c->priv);
}

/*
 * Verification checks whole block headers, so a page must hold whole blocks. The handler
 * is installed here, once per process, before any thread can touch a mapping.
 */
static int mmaptouch_setup(struct bench_ctx *c)
{
	const struct bench_params *p = c->p;
	struct mmaptouch_priv *s;
	size_t page = (size_t)p->page_size;

	if (p->page_size <= 0 || (page & (page - 1)) || !p->file_bytes ||
	    p->file_bytes > SIZE_MAX - page || (p->verify && page % PATTERN_BLOCK))
		return bench_fail(c, "setup", p->path, EINVAL);
	pthread_once(&mmaptouch_once, mmaptouch_install);
	if (mmaptouch_once_err)
		return bench_fail(c, "sigaction", p->path, mmaptouch_once_err);
	s = calloc(1, sizeof(*s));
	if (!s)
		return bench_fail(c, "setup", p->path, ENOMEM);
	s->len = (size_t)p->file_bytes;
	s->npages = (s->len + page - 1) / page;
	s->loop = p->verify ? mmaptouch_loop_verify : mmaptouch_loop_plain;
	c->priv = s;
	return 0;
}

const struct bench_ops bench_mmaptouch = {
    .name = "mmaptouch",
    .caps = BENCH_READS_REPLICA | BENCH_MAPS_REPLICA,
    .unit = BENCH_UNIT_PAGES,
    .expect = {.ops = BENCH_BY_PASSES, .bytes = BENCH_BY_PASSES | BENCH_BY_FILE},
    .what = "open, mmap read-only, touch each page in order, munmap, close; `passes` times (1b)",
    .setup = mmaptouch_setup,
    .run = mmaptouch_run,
    .teardown = bench_teardown_free,
};
