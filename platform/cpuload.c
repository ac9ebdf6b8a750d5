/* SPDX-License-Identifier: MIT */
/*
 * CPU availability beside a running process: /proc/stat, /proc/loadavg and the schedstat of
 * its threads, read as text and parsed apart from the reading (the parsers are unit-tested).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "platform/cpuload.h"

int cpuload_parse_stat(const char *text, struct cpuload_sample *s)
{
	bool cpu = false, running = false;

	for (const char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (strncmp(line, "cpu ", 4) == 0) {
			uint64_t v[8] = {0};
			int n = sscanf(line + 4,
				       "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
				       " %" SCNu64 " %" SCNu64 " %" SCNu64,
				       &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
			if (n < 4)
				return -EINVAL;
			/* user nice system idle iowait irq softirq steal; guest is in user */
			s->total = 0;
			for (int k = 0; k < n; k++)
				s->total += v[k];
			s->steal = n >= 8 ? v[7] : 0;
			cpu = true;
		} else if (strncmp(line, "procs_running ", 14) == 0) {
			s->running = (unsigned)strtoul(line + 14, NULL, 10);
			running = true;
		}
	}
	return cpu && running ? 0 : -EINVAL;
}

int cpuload_parse_loadavg(const char *text, struct cpuload_sample *s)
{
	return sscanf(text, "%lf", &s->load1) == 1 ? 0 : -EINVAL;
}

int cpuload_parse_schedstat(const char *text, uint64_t *wait)
{
	uint64_t on_cpu;

	return sscanf(text, "%" SCNu64 " %" SCNu64, &on_cpu, wait) == 2 ? 0 : -EINVAL;
}

/* The text of a small /proc file (at most len - 1 bytes). 0, or -errno. */
static int cpuload_slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	int err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	return 0;
}

/* The run-queue wait of every thread of pid, summed. 0, or -errno. */
static int cpuload_wait_of(pid_t pid, uint64_t *wait)
{
	char path[96], line[128];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	if (!(d = opendir(path)))
		return -errno;
	*wait = 0;
	while ((e = readdir(d)) != NULL) {
		uint64_t w;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%.20s/schedstat", (long)pid,
			 e->d_name);
		if (cpuload_slurp(path, line, sizeof(line)) == 0 &&
		    cpuload_parse_schedstat(line, &w) == 0)
			*wait += w;
	}
	closedir(d);
	return 0;
}

int cpuload_read(pid_t pid, struct cpuload_sample *s)
{
	static char text[16384]; /* /proc/stat: a line per CPU and per interrupt kind */
	struct timespec ts;
	int rc;

	memset(s, 0, sizeof(*s));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->at = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if ((rc = cpuload_slurp("/proc/stat", text, sizeof(text))) != 0 ||
	    (rc = cpuload_parse_stat(text, s)) != 0)
		return rc;
	if ((rc = cpuload_slurp("/proc/loadavg", text, sizeof(text))) != 0 ||
	    (rc = cpuload_parse_loadavg(text, s)) != 0)
		return rc;
	s->has_wait = pid > 0 && cpuload_wait_of(pid, &s->wait_ns) == 0;
	return 0;
}

void cpuload_begin(struct cpuload *c, unsigned cpus, unsigned own, unsigned threads)
{
	memset(c, 0, sizeof(*c));
	c->cpus = cpus ? cpus : 1;
	c->own = own;
	c->threads = threads ? threads : 1;
	c->has_wait = true;
}

void cpuload_add(struct cpuload *c, const struct cpuload_sample *s)
{
	unsigned others = s->running > c->own ? s->running - c->own : 0;

	if (!c->nsamples)
		c->first = *s;
	else if (c->has_wait && s->has_wait && c->last.has_wait && s->wait_ns > c->last.wait_ns)
		c->wait_ns += s->wait_ns - c->last.wait_ns; /* a thread that ended takes its part */
	c->has_wait = c->has_wait && s->has_wait;
	c->others_sum += others;
	c->others_max = others > c->others_max ? others : c->others_max;
	c->last = *s;
	c->nsamples++;
}

double cpuload_others(const struct cpuload *c)
{
	return c->nsamples ? c->others_sum / (double)c->nsamples : 0;
}

double cpuload_steal(const struct cpuload *c)
{
	uint64_t total = c->last.total - c->first.total;

	return c->nsamples > 1 && total ? (double)(c->last.steal - c->first.steal) / (double)total
					: 0;
}

double cpuload_wait(const struct cpuload *c)
{
	double span = c->last.at - c->first.at;

	if (!c->has_wait || c->nsamples < 2 || span <= 0)
		return -1;
	return (double)c->wait_ns / 1e9 / (span * c->threads);
}

bool cpuload_busy(const struct cpuload *c)
{
	double wait = cpuload_wait(c);

	if (cpuload_steal(c) >= CPULOAD_BUSY_STEAL)
		return true;
	return cpuload_others(c) >= CPULOAD_BUSY_OTHERS * c->cpus &&
	       (wait < 0 || wait >= CPULOAD_BUSY_WAIT);
}

void cpuload_line(const struct cpuload *c, const char *who, char *buf, size_t len)
{
	double wait = cpuload_wait(c);
	int n = snprintf(buf, len,
			 "%.1f other tasks runnable on average (at most %u) for %u CPU%s, load "
			 "average %.1f, steal %.0f%%",
			 cpuload_others(c), c->others_max, c->cpus, c->cpus == 1 ? "" : "s",
			 c->first.load1, cpuload_steal(c) * 100.0);

	if (n > 0 && (size_t)n < len && wait >= 0)
		snprintf(buf + n, len - (size_t)n,
			 ", %s threads waited %.0f%% of their time for a CPU", who, wait * 100.0);
}
