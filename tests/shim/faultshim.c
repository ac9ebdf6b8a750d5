/* SPDX-License-Identifier: MIT */
/*
 * faultshim: an LD_PRELOAD library for the fault tests (tests/faults/). It interposes read,
 * pread, write, pwrite, open, openat, fsync, fdatasync, close, mmap of a file and clock_gettime
 * (the next definitions found with dlsym RTLD_NEXT) and fails, shortens or delays chosen calls, or
 * steps the wall clock, as its environment says. Never linked into stagebench.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/*
 * The environment:
 *
 *   FAULTSHIM="RULE;RULE..."   (',' also separates rules)
 *     RULE = CALL:WHEN:ACTION
 *     CALL = read | pread (pread, pread64) | write | pwrite (pwrite, pwrite64) |
 *            open (open, open64) | openat (openat, openat64) | fsync (fsync, fdatasync) | close |
 *            mmap (mmap, mmap64 of a file descriptor: ENODEV is a FUSE direct_io file)
 *            each with its own count; read and pread are different calls, and so are open
 *            and openat (stagebench's workers open() their files, replicas are probed and
 *            files created with openat())
 *     WHEN = N (the Nth counted call of CALL, from 1) | N+ (the Nth and all later) |
 *            N-M (the Nth to the Mth) | * (every call)
 *     ACTION = an errno name (EIO, ENOSPC, EDQUOT, EINTR, EACCES, EROFS, ENOENT, ...):
 *              the call fails with it and does nothing |
 *              short: read or write half the bytes asked (at least 1) |
 *              delay=DURATION (200us, 5ms, 1s): sleep, then make the call
 *     clock:step=[+|-]SECONDS@after=SECONDS: from SECONDS (monotonic) after the process
 *              started, CLOCK_REALTIME reads SECONDS more (or less), as after a step of
 *              the system clock; absolute CLOCK_REALTIME sleeps follow it.
 *     clock:step=[+|-]SECONDS@read=N: the same step, from the Nth counted read() on: a step
 *              in a part whatever the set-up took (its reads are the part's)
 *     clock:step=[+|-]SECONDS@sleep=N: the same step, from the Nth absolute CLOCK_REALTIME
 *              clock_nanosleep on: a step in the wait for a start, whatever the set-up took
 *   FAULTSHIM_PATH=TEXT         count only calls on files whose path (as given to open)
 *                               contains TEXT; unset: every call counts
 *   FAULTSHIM_DELAY_CPU=CPU:DURATION   delay every read and pread (of counted files) made
 *                               by a thread that is running on CPU at that moment
 *   FAULTSHIM_WALL_LATE_CPU=CPU:DURATION   every CLOCK_REALTIME read made by a thread running
 *                               on CPU at that moment is made DURATION late, as by a thread
 *                               preempted just before it reads the wall clock
 *   FAULTSHIM_LOG=FILE          append one line per injected fault to FILE
 *   FAULTSHIM_TRACE=1           with FAULTSHIM_LOG: also one line per counted call
 *
 * A rule that cannot be parsed makes the process exit with status 99 at start, with a
 * message: a typo must not silently turn a fault test into a plain run.
 */

#define SHIM_EXPORT    __attribute__((visibility("default")))
#define SHIM_MAX_RULES 16
#define SHIM_MAX_FD    65536

enum shim_call {
	CALL_READ,
	CALL_PREAD,
	CALL_WRITE,
	CALL_PWRITE,
	CALL_OPEN,
	CALL_OPENAT,
	CALL_FSYNC,
	CALL_CLOSE,
	CALL_MMAP,
	CALL_COUNT
};

static const char *const shim_call_names[CALL_COUNT] = {
    "read", "pread", "write", "pwrite", "open", "openat", "fsync", "close", "mmap",
};

enum shim_action { ACT_ERRNO, ACT_SHORT, ACT_DELAY };

struct shim_rule {
	enum shim_call call;
	uint64_t lo, hi; /* counted calls lo..hi (1-based, inclusive) */
	enum shim_action action;
	int err;
	const char *err_name;
	uint64_t delay_ns;
};

static struct shim_rule shim_rules[SHIM_MAX_RULES];
static size_t shim_nrules;
static bool shim_has_rule[CALL_COUNT];
static _Atomic uint64_t shim_counts[CALL_COUNT];
static const char *shim_path;				 /* FAULTSHIM_PATH */
static _Atomic unsigned char shim_fd_match[SHIM_MAX_FD]; /* fd was opened on a counted path */
static int shim_delay_cpu = -1;				 /* FAULTSHIM_DELAY_CPU */
static uint64_t shim_delay_cpu_ns;
static int shim_wall_late_cpu = -1; /* FAULTSHIM_WALL_LATE_CPU */
static uint64_t shim_wall_late_ns;
static bool shim_clock; /* a clock step is configured */
static int64_t shim_clock_step_ns;
static uint64_t shim_clock_after_ns; /* monotonic, from shim_t0 */
static uint64_t shim_clock_read_n;   /* @read=N: the step from the Nth counted read (0: unused) */
static uint64_t shim_clock_sleep_n;  /* @sleep=N: from the Nth absolute wall sleep (0: unused) */
static _Atomic uint64_t shim_clock_sleeps;
static atomic_bool shim_clock_hit; /* the Nth read or sleep happened */
static uint64_t shim_t0;
static int shim_log_fd = -1;
static bool shim_trace;
static atomic_bool shim_ready;

static const struct {
	const char *name;
	int value;
} shim_errnos[] = {
    {"EIO", EIO},	{"ENOSPC", ENOSPC},	  {"EDQUOT", EDQUOT},
    {"EINTR", EINTR},	{"EACCES", EACCES},	  {"EPERM", EPERM},
    {"EROFS", EROFS},	{"ENOENT", ENOENT},	  {"EFBIG", EFBIG},
    {"ENOMEM", ENOMEM}, {"EAGAIN", EAGAIN},	  {"EBADF", EBADF},
    {"ESTALE", ESTALE}, {"ENXIO", ENXIO},	  {"EMFILE", EMFILE},
    {"ENFILE", ENFILE}, {"ETIMEDOUT", ETIMEDOUT}, {"EREMOTEIO", EREMOTEIO},
    {"ENODEV", ENODEV},
};

/* The next definitions of what we interpose, resolved on first use. */
#define SHIM_REAL(ret, name, ...)                                                                  \
	static ret (*real_##name)(__VA_ARGS__);                                                    \
	static ret (*shim_real_##name(void))(__VA_ARGS__)                                          \
	{                                                                                          \
		if (!real_##name)                                                                  \
			*(void **)&real_##name = dlsym(RTLD_NEXT, #name);                          \
		return real_##name;                                                                \
	}

SHIM_REAL(ssize_t, read, int, void *, size_t)
SHIM_REAL(ssize_t, pread, int, void *, size_t, off_t)
SHIM_REAL(ssize_t, pread64, int, void *, size_t, off_t)
SHIM_REAL(ssize_t, write, int, const void *, size_t)
SHIM_REAL(ssize_t, pwrite, int, const void *, size_t, off_t)
SHIM_REAL(ssize_t, pwrite64, int, const void *, size_t, off_t)
SHIM_REAL(int, open, const char *, int, ...)
SHIM_REAL(int, open64, const char *, int, ...)
SHIM_REAL(int, openat, int, const char *, int, ...)
SHIM_REAL(int, openat64, int, const char *, int, ...)
SHIM_REAL(int, fsync, int)
SHIM_REAL(int, fdatasync, int)
SHIM_REAL(int, close, int)
SHIM_REAL(void *, mmap, void *, size_t, int, int, int, off_t)
SHIM_REAL(void *, mmap64, void *, size_t, int, int, int, off_t)
SHIM_REAL(int, clock_gettime, clockid_t, struct timespec *)
SHIM_REAL(int, clock_nanosleep, clockid_t, int, const struct timespec *, struct timespec *)

/* Monotonic nanoseconds straight from the kernel: never through our own clock_gettime. */
static uint64_t shim_mono_ns(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A slow call: signals that arrive meanwhile are handled (nanosleep, not a raw system call,
 * so that ThreadSanitizer delivers them at once too) and the sleep goes on, as the slow
 * I/O it stands for would. errno is the caller's afterwards.
 */
static void shim_sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	int saved = errno;

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	errno = saved;
}

static void shim_die(const char *what, const char *text)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "faultshim: %s: '%s'\n", what, text);

	if (n > 0)
		syscall(SYS_write, 2, line,
			(size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	_exit(99);
}

/* "200us", "5ms", "1s", "1.5s", "300ns"; a bare number is seconds. */
static bool shim_parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return false;
	if (strcmp(end, "ns") == 0)
		*ns = (uint64_t)v;
	else if (strcmp(end, "us") == 0)
		*ns = (uint64_t)(v * 1e3);
	else if (strcmp(end, "ms") == 0)
		*ns = (uint64_t)(v * 1e6);
	else if (strcmp(end, "s") == 0 || *end == '\0')
		*ns = (uint64_t)(v * 1e9);
	else
		return false;
	return true;
}

/* NAME=CPU:DURATION from the environment into *cpu and *ns (unset: left as they are). */
static void shim_parse_cpu_delay(const char *name, int *cpu, uint64_t *ns)
{
	const char *v = getenv(name);
	char *end;
	long c;

	if (!v || !*v)
		return;
	c = strtol(v, &end, 10);
	if (end == v || *end != ':' || c < 0 || !shim_parse_duration(end + 1, ns)) {
		char what[80];
		snprintf(what, sizeof(what), "%s must be CPU:DURATION", name);
		shim_die(what, v);
	}
	*cpu = (int)c;
}

/* The N of "@read=N" or "@sleep=N" (text after the '='): a count from 1. */
static uint64_t shim_parse_nth(const char *n, const char *text)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(n, &end, 10);
	if (end == n || *end || errno || v == 0 || *n == '-')
		shim_die("bad @read or @sleep count (from 1)", text);
	return v;
}

/* clock:step=+3600@after=1.5, clock:step=-3600@read=2000 or clock:step=+3600@sleep=10 */
static void shim_parse_clock(char *spec, const char *text)
{
	char *at = strchr(spec, '@');
	char *end;
	double step;
	uint64_t after = 0;

	if (strncmp(spec, "step=", 5) != 0 || (at && strchr(at + 1, '@')))
		shim_die(
		    "clock rule must be clock:step=[+|-]SECONDS[@after=SECONDS|@read=N|@sleep=N]",
		    text);
	if (at) {
		*at++ = '\0';
		if (strncmp(at, "after=", 6) == 0) {
			if (!shim_parse_duration(at + 6, &after))
				shim_die("bad @after duration", text);
		} else if (strncmp(at, "read=", 5) == 0) {
			shim_clock_read_n = shim_parse_nth(at + 5, text);
			shim_has_rule[CALL_READ] = true; /* count the reads */
		} else if (strncmp(at, "sleep=", 6) == 0) {
			shim_clock_sleep_n = shim_parse_nth(at + 6, text);
		} else {
			shim_die("clock step instant must be @after=SECONDS, @read=N or @sleep=N",
				 text);
		}
	}
	step = strtod(spec + 5, &end);
	if (end == spec + 5 || *end)
		shim_die("bad clock step", text);
	shim_clock = true;
	shim_clock_step_ns = (int64_t)(step * 1e9);
	shim_clock_after_ns = after;
}

static void shim_parse_rule(char *text)
{
	char copy[256];
	char *call, *when, *action, *dash;
	struct shim_rule *r;
	size_t i;

	snprintf(copy, sizeof(copy), "%s", text);
	call = text;
	when = strchr(call, ':');
	if (!when)
		shim_die("rule is not CALL:WHEN:ACTION", copy);
	*when++ = '\0';
	if (strcmp(call, "clock") == 0) {
		shim_parse_clock(when, copy);
		return;
	}
	action = strchr(when, ':');
	if (!action)
		shim_die("rule is not CALL:WHEN:ACTION", copy);
	*action++ = '\0';
	if (shim_nrules == SHIM_MAX_RULES)
		shim_die("too many rules", copy);
	r = &shim_rules[shim_nrules];
	for (i = 0; i < CALL_COUNT; i++) {
		if (strcmp(call, shim_call_names[i]) == 0)
			break;
	}
	if (i == CALL_COUNT)
		shim_die("unknown call (read pread write pwrite open openat fsync close clock)",
			 copy);
	r->call = (enum shim_call)i;

	if (strcmp(when, "*") == 0) {
		r->lo = 1;
		r->hi = UINT64_MAX;
	} else {
		char *end;
		r->lo = strtoull(when, &end, 10);
		if (end == when || r->lo == 0)
			shim_die("bad WHEN (N, N+, N-M or *, counted from 1)", copy);
		if (*end == '+' && end[1] == '\0') {
			r->hi = UINT64_MAX;
		} else if (*end == '-') {
			dash = end + 1;
			r->hi = strtoull(dash, &end, 10);
			if (end == dash || *end || r->hi < r->lo)
				shim_die("bad WHEN (N, N+, N-M or *, counted from 1)", copy);
		} else if (*end == '\0') {
			r->hi = r->lo;
		} else {
			shim_die("bad WHEN (N, N+, N-M or *, counted from 1)", copy);
		}
	}

	if (strcmp(action, "short") == 0) {
		if (r->call != CALL_READ && r->call != CALL_PREAD && r->call != CALL_WRITE &&
		    r->call != CALL_PWRITE)
			shim_die("short applies to read, pread, write and pwrite", copy);
		r->action = ACT_SHORT;
	} else if (strncmp(action, "delay=", 6) == 0) {
		if (!shim_parse_duration(action + 6, &r->delay_ns))
			shim_die("bad delay", copy);
		r->action = ACT_DELAY;
	} else {
		for (i = 0; i < sizeof(shim_errnos) / sizeof(shim_errnos[0]); i++) {
			if (strcmp(action, shim_errnos[i].name) == 0)
				break;
		}
		if (i == sizeof(shim_errnos) / sizeof(shim_errnos[0]))
			shim_die("unknown action (an errno name, short or delay=DURATION)", copy);
		r->action = ACT_ERRNO;
		r->err = shim_errnos[i].value;
		r->err_name = shim_errnos[i].name;
	}
	shim_has_rule[r->call] = true;
	shim_nrules++;
}

__attribute__((constructor)) static void shim_init(void)
{
	const char *v;
	static char rules[1024];

	shim_t0 = shim_mono_ns();
	/* Resolved here, before any thread exists, so that no two threads race to do it. */
	shim_real_read();
	shim_real_pread();
	shim_real_pread64();
	shim_real_write();
	shim_real_pwrite();
	shim_real_pwrite64();
	shim_real_open();
	shim_real_open64();
	shim_real_openat();
	shim_real_openat64();
	shim_real_fsync();
	shim_real_fdatasync();
	shim_real_close();
	shim_real_clock_gettime();
	shim_real_clock_nanosleep();
	v = getenv("FAULTSHIM_PATH");
	shim_path = v && *v ? v : NULL;
	v = getenv("FAULTSHIM_LOG");
	if (v && *v)
		shim_log_fd = (int)syscall(SYS_openat, AT_FDCWD, v,
					   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	v = getenv("FAULTSHIM_TRACE");
	shim_trace = v && *v && strcmp(v, "0") != 0;
	shim_parse_cpu_delay("FAULTSHIM_DELAY_CPU", &shim_delay_cpu, &shim_delay_cpu_ns);
	shim_parse_cpu_delay("FAULTSHIM_WALL_LATE_CPU", &shim_wall_late_cpu, &shim_wall_late_ns);
	v = getenv("FAULTSHIM");
	if (v && *v) {
		char *save = NULL, *tok;
		if (strlen(v) >= sizeof(rules))
			shim_die("FAULTSHIM is too long", v);
		snprintf(rules, sizeof(rules), "%s", v);
		for (tok = strtok_r(rules, ";, ", &save); tok; tok = strtok_r(NULL, ";, ", &save))
			shim_parse_rule(tok);
	}
	atomic_store(&shim_ready, true);
}

static void shim_log(enum shim_call call, uint64_t n, const char *what, int fd)
{
	char line[160];
	int len;

	if (shim_log_fd < 0)
		return;
	len = snprintf(line, sizeof(line), "%s #%llu fd %d: %s\n", shim_call_names[call],
		       (unsigned long long)n, fd, what);
	if (len > 0)
		syscall(SYS_write, shim_log_fd, line, (size_t)len);
}

static bool shim_counted_fd(int fd)
{
	if (!shim_path)
		return true;
	return fd >= 0 && fd < SHIM_MAX_FD &&
	       atomic_load_explicit(&shim_fd_match[fd], memory_order_relaxed);
}

/* Count the call and return the rule that applies to it, or NULL. */
static const struct shim_rule *shim_match(enum shim_call call, bool counted, int fd)
{
	uint64_t n;

	if (!atomic_load_explicit(&shim_ready, memory_order_acquire) || !counted ||
	    !(shim_has_rule[call] || shim_trace))
		return NULL;
	n = atomic_fetch_add(&shim_counts[call], 1) + 1;
	if (call == CALL_READ && shim_clock_read_n && n >= shim_clock_read_n)
		atomic_store_explicit(&shim_clock_hit, true, memory_order_release);
	if (shim_trace)
		shim_log(call, n, "call", fd);
	for (size_t i = 0; i < shim_nrules; i++) {
		const struct shim_rule *r = &shim_rules[i];
		if (r->call != call || n < r->lo || n > r->hi)
			continue;
		if (r->action == ACT_SHORT)
			shim_log(call, n, "short", fd);
		else if (r->action == ACT_DELAY)
			shim_log(call, n, "delay", fd);
		else
			shim_log(call, n, r->err_name, fd);
		return r;
	}
	return NULL;
}

/*
 * Apply a rule before the call. Returns true when the call must fail now (errno set);
 * *len is halved for "short".
 */
static bool shim_apply(const struct shim_rule *r, size_t *len)
{
	if (!r)
		return false;
	switch (r->action) {
	case ACT_ERRNO:
		errno = r->err;
		return true;
	case ACT_SHORT:
		if (len && *len > 1)
			*len /= 2;
		return false;
	case ACT_DELAY:
		shim_sleep_ns(r->delay_ns);
		return false;
	}
	return false;
}

/* Sleep ns when the calling thread runs on cpu (-1: never), once the shim is ready. */
static void shim_late_on_cpu(int cpu, uint64_t ns)
{
	if (cpu < 0 || !atomic_load_explicit(&shim_ready, memory_order_acquire))
		return;
	if (sched_getcpu() == cpu)
		shim_sleep_ns(ns);
}

static void shim_delay_cpu_maybe(bool counted)
{
	if (counted)
		shim_late_on_cpu(shim_delay_cpu, shim_delay_cpu_ns);
}

/* ---- read and write ---- */

static ssize_t shim_read_common(ssize_t (*real)(int, void *, size_t), int fd, void *buf, size_t len)
{
	bool counted = shim_counted_fd(fd);

	shim_delay_cpu_maybe(counted);
	if (shim_apply(shim_match(CALL_READ, counted, fd), &len))
		return -1;
	return real(fd, buf, len);
}

static ssize_t shim_pread_common(ssize_t (*real)(int, void *, size_t, off_t), int fd, void *buf,
				 size_t len, off_t off)
{
	bool counted = shim_counted_fd(fd);

	shim_delay_cpu_maybe(counted);
	if (shim_apply(shim_match(CALL_PREAD, counted, fd), &len))
		return -1;
	return real(fd, buf, len, off);
}

SHIM_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	return shim_read_common(shim_real_read(), fd, buf, len);
}

SHIM_EXPORT ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	return shim_pread_common(shim_real_pread(), fd, buf, len, off);
}

SHIM_EXPORT ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	return shim_pread_common(shim_real_pread64(), fd, buf, len, off);
}

/* _FORTIFY_SOURCE variants: the buffer size checks are glibc's business, not ours. */
SHIM_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
SHIM_EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	(void)buflen;
	return read(fd, buf, len);
}

SHIM_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t len, off_t off, size_t buflen);
SHIM_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	(void)buflen;
	return pread64(fd, buf, len, off);
}

SHIM_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen);
SHIM_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t len, off_t off, size_t buflen)
{
	(void)buflen;
	return pread(fd, buf, len, off);
}

SHIM_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	bool counted = shim_counted_fd(fd);

	if (shim_apply(shim_match(CALL_WRITE, counted, fd), &len))
		return -1;
	return shim_real_write()(fd, buf, len);
}

static ssize_t shim_pwrite_common(ssize_t (*real)(int, const void *, size_t, off_t), int fd,
				  const void *buf, size_t len, off_t off)
{
	bool counted = shim_counted_fd(fd);

	if (shim_apply(shim_match(CALL_PWRITE, counted, fd), &len))
		return -1;
	return real(fd, buf, len, off);
}

SHIM_EXPORT ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return shim_pwrite_common(shim_real_pwrite(), fd, buf, len, off);
}

SHIM_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	return shim_pwrite_common(shim_real_pwrite64(), fd, buf, len, off);
}

/* ---- open and close ---- */

static bool shim_counted_path(const char *path)
{
	return !shim_path || (path && strstr(path, shim_path));
}

static void shim_track(int fd, const char *path)
{
	if (fd >= 0 && fd < SHIM_MAX_FD)
		atomic_store_explicit(&shim_fd_match[fd],
				      shim_path && path && strstr(path, shim_path),
				      memory_order_relaxed);
}

/*
 * The mode argument of an open call, in the variadic function itself: there only when the flags
 * create a file, as glibc reads it.
 */
#define SHIM_OPEN_MODE(flags, mode)                                                                \
	do {                                                                                       \
		va_list ap_;                                                                       \
		va_start(ap_, flags);                                                              \
		mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE                       \
			   ? (mode_t)va_arg(ap_, int)                                              \
			   : 0;                                                                    \
		va_end(ap_);                                                                       \
	} while (0)

/*
 * The open calls: the fault, if a rule says so, else the real call (by_path, or at_dir relative
 * to dirfd when by_path is NULL), whose descriptor is then tracked by its path.
 */
static int shim_open_common(enum shim_call call, int (*by_path)(const char *, int, ...),
			    int (*at_dir)(int, const char *, int, ...), int dirfd, const char *path,
			    int flags, mode_t mode)
{
	int fd;

	if (shim_apply(shim_match(call, shim_counted_path(path), -1), NULL))
		return -1;
	fd = by_path ? by_path(path, flags, mode) : at_dir(dirfd, path, flags, mode);
	shim_track(fd, path);
	return fd;
}

SHIM_EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode;

	SHIM_OPEN_MODE(flags, mode);
	return shim_open_common(CALL_OPEN, shim_real_open(), NULL, AT_FDCWD, path, flags, mode);
}

SHIM_EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode;

	SHIM_OPEN_MODE(flags, mode);
	return shim_open_common(CALL_OPEN, shim_real_open64(), NULL, AT_FDCWD, path, flags, mode);
}

SHIM_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode;

	SHIM_OPEN_MODE(flags, mode);
	return shim_open_common(CALL_OPENAT, NULL, shim_real_openat(), dirfd, path, flags, mode);
}

SHIM_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode;

	SHIM_OPEN_MODE(flags, mode);
	return shim_open_common(CALL_OPENAT, NULL, shim_real_openat64(), dirfd, path, flags, mode);
}

SHIM_EXPORT int __open_2(const char *path, int flags);
SHIM_EXPORT int __open_2(const char *path, int flags)
{
	return open(path, flags);
}

SHIM_EXPORT int __open64_2(const char *path, int flags);
SHIM_EXPORT int __open64_2(const char *path, int flags)
{
	return open64(path, flags);
}

SHIM_EXPORT int __openat_2(int dirfd, const char *path, int flags);
SHIM_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return openat(dirfd, path, flags);
}

SHIM_EXPORT int __openat64_2(int dirfd, const char *path, int flags);
SHIM_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return openat64(dirfd, path, flags);
}

/* A failed close still closes the descriptor on Linux: do it, then report the error. */
SHIM_EXPORT int close(int fd)
{
	bool counted = shim_counted_fd(fd);
	const struct shim_rule *r = shim_match(CALL_CLOSE, counted, fd);
	int rc;

	if (fd >= 0 && fd < SHIM_MAX_FD)
		atomic_store_explicit(&shim_fd_match[fd], 0, memory_order_relaxed);
	if (r && r->action == ACT_DELAY)
		shim_sleep_ns(r->delay_ns);
	rc = shim_real_close()(fd);
	if (r && r->action == ACT_ERRNO) {
		errno = r->err;
		return -1;
	}
	return rc;
}

static int shim_fsync_common(int (*real)(int), int fd)
{
	if (shim_apply(shim_match(CALL_FSYNC, shim_counted_fd(fd), fd), NULL))
		return -1;
	return real(fd);
}

SHIM_EXPORT int fsync(int fd)
{
	return shim_fsync_common(shim_real_fsync(), fd);
}

SHIM_EXPORT int fdatasync(int fd)
{
	return shim_fsync_common(shim_real_fdatasync(), fd);
}

/* ---- mappings of files (anonymous ones are never counted) ---- */

static void *shim_mmap_common(void *(*real)(void *, size_t, int, int, int, off_t), void *addr,
			      size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd >= 0 && !(flags & MAP_ANONYMOUS) &&
	    shim_apply(shim_match(CALL_MMAP, shim_counted_fd(fd), fd), NULL))
		return MAP_FAILED;
	return real(addr, len, prot, flags, fd, off);
}

SHIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return shim_mmap_common(shim_real_mmap(), addr, len, prot, flags, fd, off);
}

SHIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return shim_mmap_common(shim_real_mmap64(), addr, len, prot, flags, fd, off);
}

/* ---- the wall clock ---- */

static bool shim_is_realtime(clockid_t id)
{
	return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE;
}

/* The step in effect now: 0 before the configured instant. */
static int64_t shim_clock_offset(void)
{
	if (!shim_clock || !atomic_load_explicit(&shim_ready, memory_order_acquire))
		return 0;
	if (shim_clock_read_n || shim_clock_sleep_n)
		return atomic_load_explicit(&shim_clock_hit, memory_order_acquire)
			   ? shim_clock_step_ns
			   : 0;
	return shim_mono_ns() - shim_t0 >= shim_clock_after_ns ? shim_clock_step_ns : 0;
}

static void shim_ts_add(struct timespec *ts, int64_t ns)
{
	int64_t t = (int64_t)ts->tv_nsec + ns % 1000000000;

	ts->tv_sec += (time_t)(ns / 1000000000);
	if (t < 0) {
		t += 1000000000;
		ts->tv_sec--;
	} else if (t >= 1000000000) {
		t -= 1000000000;
		ts->tv_sec++;
	}
	ts->tv_nsec = (long)t;
}

SHIM_EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
	int rc;
	int64_t off;

	if (shim_is_realtime(id))
		shim_late_on_cpu(shim_wall_late_cpu, shim_wall_late_ns);
	rc = shim_real_clock_gettime()(id, ts);

	if (rc == 0 && shim_is_realtime(id) && (off = shim_clock_offset()) != 0)
		shim_ts_add(ts, off);
	return rc;
}

/* An absolute sleep on the stepped wall clock ends when that clock reaches the target. */
SHIM_EXPORT int clock_nanosleep(clockid_t id, int flags, const struct timespec *req,
				struct timespec *rem)
{
	struct timespec t;
	int64_t off;

	if (shim_clock_sleep_n && (flags & TIMER_ABSTIME) && shim_is_realtime(id) &&
	    atomic_load_explicit(&shim_ready, memory_order_acquire) &&
	    atomic_fetch_add(&shim_clock_sleeps, 1) + 1 >= shim_clock_sleep_n)
		atomic_store_explicit(&shim_clock_hit, true, memory_order_release);
	if (req && (flags & TIMER_ABSTIME) && shim_is_realtime(id) &&
	    (off = shim_clock_offset()) != 0) {
		t = *req;
		shim_ts_add(&t, -off);
		return shim_real_clock_nanosleep()(id, flags, &t, rem);
	}
	return shim_real_clock_nanosleep()(id, flags, req, rem);
}
