/* SPDX-License-Identifier: MIT */
/*
 * Replicas: writing one at the speed of the storage (several threads, large pieces),
 * publishing it atomically under its final name, and recognising stagebench's files from
 * their first block without trusting the local page cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <ctype.h>
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
#include "util/pattern.h"
#include "workers/replica.h"

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
	struct bench_error err;
};

/* Opened for reading the first and last blocks of a file; see replica_reader_open. */
struct replica_reader {
	int fd;
	bool direct;
	struct stat st;
	void *block; /* PATTERN_BLOCK bytes, aligned for O_DIRECT */
};

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
		bench_error_set(&w->err, "write", j->path, false, 0, -rc);
		goto out;
	}
	for (i = w->first; i < w->end; i++) {
		if (bench_should_stop(j->stop) ||
		    atomic_load_explicit(&j->abort, memory_order_relaxed)) {
			rc = -EINTR;
			goto out;
		}
		off = i * j->piece;
		n = (size_t)(j->size - off < j->piece ? j->size - off : j->piece);
		pattern_fill(buf, n, j->gen, off);
		if (j->serialize)
			pthread_mutex_lock(&j->turn);
		rc = replica_pwrite_all(j->fd, buf, n, off, &at);
		if (j->serialize)
			pthread_mutex_unlock(&j->turn);
		if (rc) {
			bench_error_set(&w->err, "write", j->path, true, at, rc);
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
static int replica_write_all(struct replica_job *j, unsigned n, struct bench_error *err)
{
	struct replica_writer *w;
	unsigned i, started = 1;
	int rc = 0;

	w = calloc(n, sizeof(*w));
	if (!w)
		return bench_error_set(err, "write", j->path, false, 0, ENOMEM);
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
			bench_error_set(err, "thread", j->path, false, 0, rc);
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
		rc = bench_error_set(err, "write", j->path, false, 0, EINTR);
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
 * killed one's. False when it does not fit.
 */
static bool replica_tmp_name(const char *name, char *tmp, size_t len)
{
	char host[65] = "", token[FS_TOKEN_LEN + 1];
	int n;

	fs_token(token, sizeof(token));
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	for (char *h = host; *h; h++) {
		if (*h == '/')
			*h = '_';
	}
	n = snprintf(tmp, len, "%s.tmp.%s.%ld.%s", name, host, (long)getpid(), token);
	return n >= 0 && (size_t)n < len;
}

/* The pattern written into fd (size bytes, generation gen) by up to nthreads threads. */
static int replica_fill(int fd, const char *tmppath, uint64_t size, uint64_t gen, uint64_t xfer,
			unsigned nthreads, const volatile int *stop, struct bench_error *err)
{
	struct replica_job j;
	int rc;

	memset(&j, 0, sizeof(j));
	j.fd = fd;
	j.size = size;
	j.gen = gen;
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
		   unsigned nthreads, uint64_t xfer, bool replace, const volatile int *stop,
		   struct bench_error *err)
{
	static const int never;
	char tmp[NAME_MAX + 1], tmppath[BENCH_PATH_MAX], path[BENCH_PATH_MAX];
	struct bench_error dummy;
	bool created = false, owned = false;
	int rc, fd = -1;

	if (!err)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	if (!stop)
		stop = &never;
	dir = dir ? dir : ".";
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!replica_tmp_name(name, tmp, sizeof(tmp))) {
		rc = bench_error_set(err, "create", path, false, 0, ENAMETOOLONG);
		goto out;
	}
	snprintf(tmppath, sizeof(tmppath), "%s/%s", dir, tmp);
	if (!size || size % PATTERN_BLOCK || !xfer) {
		rc = bench_error_set(err, "create", path, false, 0, EINVAL);
		goto out;
	}
	/* Pieces hold whole blocks of the pattern: an odd --xfer is rounded up to a block here. */
	xfer = (xfer + PATTERN_BLOCK - 1) / PATTERN_BLOCK * PATTERN_BLOCK;

	fd = fs_create(dirfd, tmp, O_RDWR);
	if (fd < 0) {
		rc = bench_error_set(err, "create", tmppath, false, 0, fd);
		goto out;
	}
	created = true;
	owned = replica_pending_arm(dirfd, tmp);
	rc = replica_reserve(fd, size);
	if (rc) {
		rc = bench_error_set(err, "fallocate", tmppath, false, 0, rc);
		goto out;
	}

	rc = replica_fill(fd, tmppath, size, gen, xfer, nthreads, stop, err);
	if (rc)
		goto out;

	if (fdatasync(fd) != 0) {
		rc = bench_error_set(err, "fsync", tmppath, false, 0, errno);
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
		rc = bench_error_set(err, "close", tmppath, false, 0, errno);
		goto out;
	}
	if (bench_should_stop(stop)) {
		rc = bench_error_set(err, "write", tmppath, false, 0, EINTR);
		goto out;
	}
	rc = replica_publish(dirfd, tmp, name, replace);
	if (rc) {
		rc = bench_error_set(err, "rename", path, false, 0, rc);
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

/*
 * O_NOFOLLOW and O_NONBLOCK: between the caller's fstatat and this open the name could
 * have become a symlink or a FIFO; neither may be followed or block us.
 */
static int replica_reader_reopen(struct replica_reader *r, int dirfd, const char *name)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
	int fd;

	fd = openat(dirfd, name, flags | (r->direct ? O_DIRECT : 0));
	if (fd < 0 && errno == EINVAL && r->direct) {
		r->direct = false;
		fd = openat(dirfd, name, flags);
	}
	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = fd;
	if (fstat(fd, &r->st) != 0)
		return -errno;
	if (!S_ISREG(r->st.st_mode))
		return S_ISDIR(r->st.st_mode) ? -EISDIR : -EINVAL;
	return 0;
}

/*
 * Open name for reading its blocks, refusing anything but a regular file (a symlink is
 * -EINVAL, a directory -EISDIR), and preferring O_DIRECT so that what is read is what
 * the server holds, not this node's cache of it.
 */
static int replica_reader_open(struct replica_reader *r, int dirfd, const char *name)
{
	struct stat st;
	int rc;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->direct = true;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	rc = -posix_memalign(&r->block, PATTERN_BLOCK, PATTERN_BLOCK);
	if (rc) {
		r->block = NULL;
		return rc;
	}
	return replica_reader_reopen(r, dirfd, name);
}

static void replica_reader_close(struct replica_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->block);
	r->fd = -1;
	r->block = NULL;
}

/*
 * Read the block at off into r->block, zero-padded when the file ends inside it. Some
 * filesystems (tmpfs, some FUSE) refuse O_DIRECT reads with EINVAL: read normally then.
 */
static int replica_reader_block(struct replica_reader *r, int dirfd, const char *name, uint64_t off)
{
	unsigned char *b = r->block;
	size_t got = 0;
	ssize_t n;
	int rc;

	memset(b, 0, PATTERN_BLOCK);
	while (got < PATTERN_BLOCK) {
		n = pread(r->fd, b + got, PATTERN_BLOCK - got, (off_t)(off + got));
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EINVAL || !r->direct)
			return -errno;
		r->direct = false;
		rc = replica_reader_reopen(r, dirfd, name);
		if (rc)
			return rc;
	}
	return 0;
}

/* Whether r->block holds a valid header for offset off, of any generation (*gen gets it). */
static bool replica_block_valid(const void *block, uint64_t off, uint64_t *gen)
{
	uint64_t g = 0, o = 0;
	int rc = pattern_check(block, 0, off, &g, &o);

	if (rc != 0 && rc != -ESTALE)
		return false;
	if (pattern_check(block, g, off, NULL, NULL) != 0)
		return false;
	*gen = g;
	return true;
}

int replica_probe(int dirfd, const char *name, struct replica_info *out)
{
	struct replica_reader r;
	uint64_t gen = 0, last_gen = 0, last;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = replica_reader_open(&r, dirfd, name);
	if (rc)
		goto out;
	out->size = (uint64_t)r.st.st_size;
	out->mtime = (double)r.st.st_mtim.tv_sec + r.st.st_mtim.tv_nsec / 1e9;
	if (!out->size)
		goto out;
	rc = replica_reader_block(&r, dirfd, name, 0);
	if (rc || !replica_block_valid(r.block, 0, &gen))
		goto out;
	out->generation = gen;
	last = (out->size - 1) / PATTERN_BLOCK * PATTERN_BLOCK;
	if (last) {
		rc = replica_reader_block(&r, dirfd, name, last);
		if (rc || !replica_block_valid(r.block, last, &last_gen) || last_gen != gen)
			goto out;
	}
	out->ours = true;
out:
	replica_reader_close(&r);
	return rc;
}

int replica_is_ours(int dirfd, const char *name)
{
	struct replica_reader r;
	uint64_t gen;
	int rc;

	rc = replica_reader_open(&r, dirfd, name);
	if (rc == -EINVAL || rc == -EISDIR) {
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	rc = replica_reader_block(&r, dirfd, name, 0);
	if (rc)
		goto out;
	rc = replica_block_valid(r.block, 0, &gen) ? 1 : 0;
out:
	replica_reader_close(&r);
	return rc;
}

/*
 * The check and the unlink are two steps: the name could be replaced in between. Only
 * another stagebench process preparing the same replica could do that, with a file that
 * is ours as well.
 */
int replica_remove(int dirfd, const char *name)
{
	int rc = replica_is_ours(dirfd, name);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return -EPERM;
	return unlinkat(dirfd, name, 0) ? -errno : 0;
}

int replica_identity_get(int dirfd, const char *name, struct replica_identity *out)
{
	struct replica_reader r;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = replica_reader_open(&r, dirfd, name);
	if (rc)
		goto out;
	out->dev = (uint64_t)r.st.st_dev;
	out->ino = (uint64_t)r.st.st_ino;
	out->size = (uint64_t)r.st.st_size;
	out->mtime_ns = (int64_t)r.st.st_mtim.tv_sec * 1000000000 + r.st.st_mtim.tv_nsec;
	out->ctime_ns = (int64_t)r.st.st_ctim.tv_sec * 1000000000 + r.st.st_ctim.tv_nsec;
	if (out->size) {
		rc = replica_reader_block(&r, dirfd, name, 0);
		if (rc)
			goto out;
		out->has_generation = replica_block_valid(r.block, 0, &out->generation);
	}
out:
	replica_reader_close(&r);
	return rc;
}

int replica_identity_check(int dirfd, const char *name, const struct replica_identity *before,
			   unsigned *changed)
{
	struct replica_identity now;
	int rc = replica_identity_get(dirfd, name, &now);

	*changed = 0;
	if (rc == -ENOENT) {
		*changed = REPLICA_CHANGED_GONE;
		return 1;
	}
	if (rc)
		return rc;
	if (now.dev != before->dev || now.ino != before->ino)
		*changed |= REPLICA_CHANGED_FILE;
	if (now.size != before->size)
		*changed |= REPLICA_CHANGED_SIZE;
	if (now.has_generation != before->has_generation || now.generation != before->generation)
		*changed |= REPLICA_CHANGED_GENERATION;
	if (now.mtime_ns != before->mtime_ns || now.ctime_ns != before->ctime_ns)
		*changed |= REPLICA_CHANGED_TIMES;
	return *changed ? 1 : 0;
}

static const char replica_prefix[] = "stagebench.";

/* Take digits off the end of s[0..*end); how many (at most max, else none are taken). */
static size_t replica_rdigits(const char *s, size_t *end, size_t max)
{
	size_t e = *end;

	while (e > 0 && isdigit((unsigned char)s[e - 1]) && *end - e < max + 1)
		e--;
	if (*end - e > max)
		return 0;
	max = *end - e;
	*end = e;
	return max;
}

/* Take lit off the end of s[0..*end) if it is there. */
static bool replica_rlit(const char *s, size_t *end, const char *lit)
{
	size_t n = strlen(lit);

	if (*end < n || memcmp(s + *end - n, lit, n) != 0)
		return false;
	*end -= n;
	return true;
}

/* Take "<sep><token>" off the end of s[0..*end) if it is there. */
static bool replica_rtoken(const char *s, size_t *end, const char *sep)
{
	size_t e = *end;

	if (e < FS_TOKEN_LEN)
		return false;
	for (size_t i = e - FS_TOKEN_LEN; i < e; i++) {
		if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return false;
	}
	e -= FS_TOKEN_LEN;
	if (!replica_rlit(s, &e, sep))
		return false;
	*end = e;
	return true;
}

/* s[0..n) is a host or node name: 1-64 of [A-Za-z0-9._-], not starting with '.' or '-'. */
static bool replica_host_ok(const char *s, size_t n)
{
	if (n < 1 || n > 64 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	}
	return true;
}

/* "<digit>[<a-z>]." at s: a test or part name and its dot; the length taken, or 0. */
static size_t replica_part_len(const char *s)
{
	size_t n = 0;

	if (!isdigit((unsigned char)s[n]) || s[n] == '0')
		return 0;
	n++;
	if (s[n] >= 'a' && s[n] <= 'z')
		n++;
	return s[n] == '.' ? n + 1 : 0;
}

/* "<digits><unit>.tmp." at s: the length taken, or 0. */
static size_t replica_size_len(const char *s)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "B"};
	size_t n = strspn(s, "0123456789");

	if (n < 1 || n > 20)
		return 0;
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		size_t k = strlen(units[u]);

		if (strncmp(s + n, units[u], k) == 0 && strncmp(s + n + k, ".tmp.", 5) == 0)
			return n + k + 5;
	}
	return 0;
}

static bool replica_temp_name(const char *rest)
{
	size_t n = replica_part_len(rest), k, end, e;

	if (!n || !(k = replica_size_len(rest + n)))
		return false;
	rest += n + k;
	end = strlen(rest);
	e = end;
	if (replica_rtoken(rest, &e, ".") && replica_rdigits(rest, &e, 10) &&
	    replica_rlit(rest, &e, ".") && replica_host_ok(rest, e))
		return true;
	e = end;
	return replica_rdigits(rest, &e, 10) && replica_rlit(rest, &e, ".") &&
	       replica_host_ok(rest, e);
}

static bool replica_test4_name(const char *rest)
{
	size_t n = replica_part_len(rest), e;

	if (!n)
		return false;
	rest += n;
	e = strlen(rest);
	if (replica_rdigits(rest, &e, 20) < 6 || !replica_rlit(rest, &e, ".") ||
	    !replica_rdigits(rest, &e, 10) || !replica_rlit(rest, &e, ".t") ||
	    !replica_rdigits(rest, &e, 10) || !replica_rlit(rest, &e, "-r"))
		return false;
	replica_rtoken(rest, &e, "-");
	return replica_rdigits(rest, &e, 10) && replica_rlit(rest, &e, ".p") &&
	       replica_host_ok(rest, e);
}

enum replica_leftover replica_leftover_name(const char *name)
{
	const char *rest = name + sizeof(replica_prefix) - 1;

	if (strncmp(name, replica_prefix, sizeof(replica_prefix) - 1) != 0)
		return REPLICA_LEFTOVER_NONE;
	if (replica_temp_name(rest))
		return REPLICA_LEFTOVER_TEMP;
	if (replica_test4_name(rest))
		return REPLICA_LEFTOVER_TEST4;
	return REPLICA_LEFTOVER_NONE;
}

static bool replica_block_zero(const unsigned char *b)
{
	for (size_t i = 0; i < PATTERN_BLOCK; i++) {
		if (b[i])
			return false;
	}
	return true;
}

int replica_leftover_kind(int dirfd, const char *name)
{
	enum replica_leftover kind = replica_leftover_name(name);
	struct replica_reader r;
	uint64_t gen;
	int rc;

	if (kind == REPLICA_LEFTOVER_NONE)
		return 0;
	rc = replica_reader_open(&r, dirfd, name);
	if (rc == -EINVAL || rc == -EISDIR) {
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;
	if (r.st.st_size == 0) {
		rc = (int)kind;
		goto out;
	}
	rc = replica_reader_block(&r, dirfd, name, 0);
	if (rc)
		goto out;
	if (replica_block_valid(r.block, 0, &gen) ||
	    (kind == REPLICA_LEFTOVER_TEMP && r.st.st_size >= PATTERN_BLOCK &&
	     replica_block_zero(r.block)))
		rc = (int)kind;
out:
	replica_reader_close(&r);
	return rc;
}

int replica_removable(int dirfd, const char *name)
{
	int rc = replica_is_ours(dirfd, name);

	if (rc != 0)
		return rc;
	return replica_leftover_kind(dirfd, name) > 0 ? 1 : 0;
}
