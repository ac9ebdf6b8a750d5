/* SPDX-License-Identifier: MIT */
/*
 * Creating a replica at the speed of the storage (several threads, large pieces) under a
 * temporary name, and publishing it atomically under its final name; each creation a new
 * generation. What a file is, once there: replica_probe.h, replica_identity.h, ours.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "platform/fsinfo.h"
#include "platform/replica.h"
#include "util/names.h"
#include "util/pattern.h"

/*
 * Pieces of at least this size keep the system-call and pattern-loop overhead per byte
 * negligible. Writers beyond a few gain little, since most filesystems serialize buffered
 * writes to one file on its inode lock (the threads overlap generating the pattern with
 * each other's copies), so their number, and buffer memory, is capped.
 */
#define REPLICA_PIECE_MIN   (4u << 20)
#define REPLICA_MAX_THREADS 16

/*
 * The temporary file being written, for replica_abort_cleanup() in a signal handler: armed
 * while the name in replica_pending_name exists because we created it. One replica_create
 * at a time owns the slot (stagebench creates one replica at a time; a concurrent call
 * goes without). Lock-free atomics, so the handler may read them.
 */
static atomic_int replica_pending_owned;
static atomic_int replica_pending_armed;
static int replica_pending_dirfd = -1;
static char replica_pending_name[NAME_MAX + 1];

void replica_abort_cleanup(void)
{
	if (atomic_load_explicit(&replica_pending_armed, memory_order_acquire))
		unlinkat(replica_pending_dirfd, replica_pending_name, 0);
}

/* Arm the slot for tmp in dirfd; returns whether this call owns it. */
static bool replica_pending_arm(int dirfd, const char *tmp)
{
	int free_slot = 0;

	if (!atomic_compare_exchange_strong(&replica_pending_owned, &free_slot, 1))
		return false;
	replica_pending_dirfd = dirfd;
	snprintf(replica_pending_name, sizeof(replica_pending_name), "%s", tmp);
	atomic_store_explicit(&replica_pending_armed, 1, memory_order_release);
	return true;
}

static void replica_pending_disarm(bool owned)
{
	if (!owned)
		return;
	atomic_store_explicit(&replica_pending_armed, 0, memory_order_release);
	atomic_store_explicit(&replica_pending_owned, 0, memory_order_release);
}

/* What all writer threads share; read-only but for abort. */
struct replica_job {
	int fd;
	uint64_t size;
	uint64_t gen;
	uint64_t piece; /* bytes per pwrite: a multiple of xfer, at least REPLICA_PIECE_MIN */
	uint64_t npieces;
	const struct pattern_origin *origin; /* into block 0, or NULL */
	const volatile int *stop;
	atomic_int abort; /* a writer failed: the others stop at their next piece */
	/*
	 * Where the filesystem serializes writers of one file on its inode lock, the writers
	 * take turns for the pwrite itself: one fills its next piece while another writes,
	 * and a waiting writer sleeps instead of spinning on the inode lock.
	 */
	bool serialize;
	pthread_mutex_t turn;
	const char *path; /* the temporary file, for messages */
};

struct replica_writer {
	struct replica_job *job;
	pthread_t tid;
	uint64_t first, end; /* pieces [first, end) */
	int rc;		     /* 0, -EINTR (stopped), or -errno with err set */
	struct io_error err;
};

/* The caller's stop flag, set by another thread or a signal handler: a relaxed atomic load. */
static bool replica_stopping(const volatile int *stop)
{
	return __atomic_load_n(stop, __ATOMIC_RELAXED) != 0;
}

static uint64_t replica_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * The counter separates two calls within one clock tick of one process; the pid separates
 * processes (on one node or several) that start preparing at the same instant.
 */
uint64_t replica_new_generation(void)
{
	static atomic_uint_fast64_t calls;
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	x = replica_mix(x + 0x9e3779b97f4a7c15ull) ^ ((uint64_t)getpid() << 20);
	x = replica_mix(x + 0x9e3779b97f4a7c15ull * (atomic_fetch_add(&calls, 1) + 1));
	return x ? x : 1;
}

static int replica_pwrite_all(int fd, const unsigned char *buf, size_t len, uint64_t off,
			      uint64_t *at)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pwrite(fd, buf + done, len - done, (off_t)(off + done));
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		*at = off + done;
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* Fill and write the writer's pieces, checking for a stop or a failed sibling between them. */
static int replica_writer_range(struct replica_writer *w)
{
	struct replica_job *j = w->job;
	unsigned char *buf = NULL;
	uint64_t i, off, at = 0;
	size_t n;
	int rc = 0;

	rc = -posix_memalign((void **)&buf, PATTERN_BLOCK, (size_t)j->piece);
	if (rc) {
		buf = NULL;
		io_error_set(&w->err, "write", j->path, false, 0, -rc);
		goto out;
	}
	for (i = w->first; i < w->end; i++) {
		if (replica_stopping(j->stop) ||
		    atomic_load_explicit(&j->abort, memory_order_relaxed)) {
			rc = -EINTR;
			goto out;
		}
		off = i * j->piece;
		n = (size_t)(j->size - off < j->piece ? j->size - off : j->piece);
		pattern_fill(buf, n, j->gen, off);
		if (off == 0 && j->origin)
			pattern_origin_put(buf, j->gen, j->origin);
		if (j->serialize)
			pthread_mutex_lock(&j->turn);
		rc = replica_pwrite_all(j->fd, buf, n, off, &at);
		if (j->serialize)
			pthread_mutex_unlock(&j->turn);
		if (rc) {
			io_error_set(&w->err, "write", j->path, true, at, rc);
			goto out;
		}
	}
out:
	free(buf);
	return rc;
}

static void *replica_writer_main(void *arg)
{
	struct replica_writer *w = arg;

	w->rc = replica_writer_range(w);
	if (w->rc)
		atomic_store(&w->job->abort, 1);
	return NULL;
}

/*
 * Write all pieces with n writers: the caller is writer 0, the others are threads. The
 * first writer (in file order) that failed gives the error; otherwise a stop gives -EINTR.
 */
static int replica_write_all(struct replica_job *j, unsigned n, struct io_error *err)
{
	struct replica_writer *w;
	unsigned i, started = 1;
	int rc = 0;

	w = calloc(n, sizeof(*w));
	if (!w)
		return io_error_set(err, "write", j->path, false, 0, ENOMEM);
	for (i = 0; i < n; i++) {
		w[i].job = j;
		w[i].first = j->npieces * i / n;
		w[i].end = j->npieces * (i + 1) / n;
	}
	/*
	 * The writer threads take no asynchronous signal (SIGINT, SIGTERM...): the calling
	 * thread, writer 0, handles them, so a handler never runs beside the caller's code.
	 */
	sigset_t all, old;
	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 1; i < n; i++, started++) {
		rc = pthread_create(&w[i].tid, NULL, replica_writer_main, &w[i]);
		if (rc) {
			atomic_store(&j->abort, 1);
			io_error_set(err, "thread", j->path, false, 0, rc);
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	replica_writer_main(&w[0]);
	for (i = 1; i < started; i++)
		pthread_join(w[i].tid, NULL);
	if (err->errnum) {
		rc = -err->errnum;
		goto out;
	}
	rc = 0;
	for (i = 0; i < n; i++) {
		if (w[i].err.errnum) {
			*err = w[i].err;
			rc = -w[i].err.errnum;
			goto out;
		}
		if (w[i].rc)
			rc = w[i].rc;
	}
	if (rc)
		rc = io_error_set(err, "write", j->path, false, 0, EINTR);
out:
	free(w);
	return rc;
}

/*
 * Reserve the whole file before writing. On ext4 a 4 GiB replica was written 10-20%
 * faster with it than without (the extents are allocated at once, not as the pieces of
 * several threads arrive), and a lack of space fails now instead of gigabytes later.
 * fallocate(2), not posix_fallocate: where the filesystem cannot reserve (NFSv3, some
 * FUSE), glibc would emulate it by writing every block, doubling the work; we go on.
 */
static int replica_reserve(int fd, uint64_t size)
{
	if (fallocate(fd, 0, 0, (off_t)size) == 0)
		return 0;
	if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)
		return -errno;
	return 0;
}

/*
 * Publish tmp as name. Without replace the name must not exist: RENAME_NOREPLACE where the
 * filesystem has it, else link(2), which fails with EEXIST just as atomically (NFS has no
 * RENAME_NOREPLACE but has links). Only a filesystem with neither falls back to a check
 * then rename; even there two racing nodes each publish a complete replica, never a mix.
 */
static int replica_publish(int dirfd, const char *tmp, const char *name, bool replace)
{
	struct stat st;
	int e;

	if (replace)
		return renameat(dirfd, tmp, dirfd, name) ? -errno : 0;
	if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0)
		return 0;
	e = errno;
	if (e != EINVAL && e != ENOSYS && e != EOPNOTSUPP)
		return -e;
	if (linkat(dirfd, tmp, dirfd, name, 0) == 0) {
		unlinkat(dirfd, tmp, 0);
		return 0;
	}
	e = errno;
	if (e != EPERM && e != EOPNOTSUPP && e != ENOSYS)
		return -e;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	if (errno != ENOENT)
		return -errno;
	return renameat(dirfd, tmp, dirfd, name) ? -errno : 0;
}

/*
 * The temporary name of name, into tmp: host, pid and a random token, so that two nodes
 * preparing on one server never share one, and neither does a later run whose pid repeats a
 * killed one's. 0 or -ENAMETOOLONG.
 */
static int replica_tmp_name(const char *name, char *tmp, size_t len)
{
	char host[NAMES_HOST_MAX + 1] = "", token[FS_TOKEN_LEN + 1];

	fs_token(token, sizeof(token));
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	return names_temp(tmp, len, name, host, (long)getpid(), token);
}

/*
 * The pattern written into fd (size bytes, generation gen, origin in block 0) by up to
 * nthreads threads.
 */
static int replica_fill(int fd, const char *tmppath, uint64_t size, uint64_t gen,
			const struct pattern_origin *origin, uint64_t xfer, unsigned nthreads,
			const volatile int *stop, struct io_error *err)
{
	struct replica_job j;
	int rc;

	memset(&j, 0, sizeof(j));
	j.fd = fd;
	j.size = size;
	j.gen = gen;
	j.origin = origin;
	j.piece = (REPLICA_PIECE_MIN + xfer - 1) / xfer * xfer;
	j.npieces = (size + j.piece - 1) / j.piece;
	j.stop = stop;
	j.path = tmppath;
	atomic_init(&j.abort, 0);
	if (nthreads < 1)
		nthreads = 1;
	if (nthreads > REPLICA_MAX_THREADS)
		nthreads = REPLICA_MAX_THREADS;
	if (nthreads > j.npieces)
		nthreads = (unsigned)j.npieces;
	j.serialize = !fs_writes_in_parallel(fd);
	pthread_mutex_init(&j.turn, NULL);
	rc = replica_write_all(&j, nthreads, err);
	pthread_mutex_destroy(&j.turn);
	return rc;
}

int replica_create(int dirfd, const char *dir, const char *name, uint64_t size, uint64_t gen,
		   const struct pattern_origin *origin, unsigned nthreads, uint64_t xfer,
		   bool replace, const volatile int *stop, struct io_error *err)
{
	static const int never;
	char tmp[NAME_MAX + 1], tmppath[IO_ERROR_PATH_MAX], path[IO_ERROR_PATH_MAX];
	struct io_error dummy;
	bool created = false, owned = false;
	int rc, fd = -1;

	if (!err)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	if (!stop)
		stop = &never;
	dir = dir ? dir : ".";
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	rc = replica_tmp_name(name, tmp, sizeof(tmp));
	if (rc) {
		rc = io_error_set(err, "create", path, false, 0, rc);
		goto out;
	}
	snprintf(tmppath, sizeof(tmppath), "%s/%s", dir, tmp);
	if (!size || size % PATTERN_BLOCK || !xfer) {
		rc = io_error_set(err, "create", path, false, 0, EINVAL);
		goto out;
	}
	/* Pieces hold whole blocks of the pattern: an odd --xfer is rounded up to a block here. */
	xfer = (xfer + PATTERN_BLOCK - 1) / PATTERN_BLOCK * PATTERN_BLOCK;

	fd = fs_create(dirfd, tmp, O_RDWR);
	if (fd < 0) {
		rc = io_error_set(err, "create", tmppath, false, 0, fd);
		goto out;
	}
	created = true;
	owned = replica_pending_arm(dirfd, tmp);
	rc = replica_reserve(fd, size);
	if (rc) {
		rc = io_error_set(err, "fallocate", tmppath, false, 0, rc);
		goto out;
	}

	rc = replica_fill(fd, tmppath, size, gen, origin, xfer, nthreads, stop, err);
	if (rc)
		goto out;

	if (fdatasync(fd) != 0) {
		rc = io_error_set(err, "fsync", tmppath, false, 0, errno);
		goto out;
	}
	/*
	 * Every node starts cold: the writer drops the pages it just wrote (clean after the
	 * sync), so its first read goes to the server like every other node's. Advice only:
	 * what the kernel keeps is measured by the reader's residency, not an error here.
	 */
	struct fs_residency after;
	fs_drop_fd(fd, &after);
	rc = close(fd);
	fd = -1;
	if (rc != 0) {
		rc = io_error_set(err, "close", tmppath, false, 0, errno);
		goto out;
	}
	if (replica_stopping(stop)) {
		rc = io_error_set(err, "write", tmppath, false, 0, EINTR);
		goto out;
	}
	rc = replica_publish(dirfd, tmp, name, replace);
	if (rc) {
		rc = io_error_set(err, "rename", path, false, 0, rc);
		goto out;
	}
	created = false;
out:
	if (fd >= 0)
		close(fd);
	if (created)
		unlinkat(dirfd, tmp, 0);
	replica_pending_disarm(owned);
	return rc;
}
