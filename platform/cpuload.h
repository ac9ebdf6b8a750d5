/* SPDX-License-Identifier: MIT */
/*
 * How available the node's CPUs are to a process while it runs: the run queue and the stolen
 * time of /proc/stat, the load average of /proc/loadavg, and how long the process's own
 * threads waited for a CPU (/proc/PID/task/TID/schedstat), sampled beside it. `check` judges
 * its probe's deadline against them: a busy CPU is said to be busy, not the server slow.
 */
#ifndef STAGEBENCH_CPULOAD_H
#define STAGEBENCH_CPULOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Busy: on average at least this many other runnable tasks per CPU beside the process ... */
#define CPULOAD_BUSY_OTHERS 1.0
/* ... while its threads waited at least this share of their time for a CPU (when known), */
#define CPULOAD_BUSY_WAIT 0.2
/* or at least this share of the CPUs' time stolen by the hypervisor. */
#define CPULOAD_BUSY_STEAL 0.1

struct cpuload_sample {
	double at;	       /* CLOCK_MONOTONIC seconds */
	double load1;	       /* the 1-minute load average */
	unsigned running;      /* procs_running: runnable tasks now, the reader among them */
	uint64_t total, steal; /* ticks of the "cpu" line: all of them, and those stolen */
	bool has_wait;	       /* wait_ns could be read (schedstat is not in every kernel) */
	uint64_t wait_ns;      /* the process's threads' time spent waiting on a run queue */
};

/* The samples of one interval, summed. */
struct cpuload {
	unsigned cpus;	  /* online CPUs of the machine (the run queue is the machine's) */
	unsigned own;	  /* runnable tasks of ours in procs_running (its threads, the reader) */
	unsigned threads; /* the process's working threads, the denominator of the wait */
	size_t nsamples;
	double others_sum; /* other runnable tasks, summed over the samples */
	unsigned others_max;
	uint64_t wait_ns; /* the wait of the process's threads, summed over the intervals */
	bool has_wait;
	struct cpuload_sample first, last;
};

/* /proc/stat's text: procs_running and the "cpu" line's ticks into s. 0, or -EINVAL. */
int cpuload_parse_stat(const char *text, struct cpuload_sample *s);
/* /proc/loadavg's text: the 1-minute load average into s. 0, or -EINVAL. */
int cpuload_parse_loadavg(const char *text, struct cpuload_sample *s);
/* A schedstat line ("on-CPU ns, run-queue wait ns, slices"): the wait into *wait. 0, -EINVAL. */
int cpuload_parse_schedstat(const char *text, uint64_t *wait);

/* A sample now, the wait of pid's threads with it (pid 0: none). 0, or -errno. */
int cpuload_read(pid_t pid, struct cpuload_sample *s);

/* An interval begins: cpus online, own tasks of ours runnable, threads working. */
void cpuload_begin(struct cpuload *c, unsigned cpus, unsigned own, unsigned threads);
/* One more sample of the interval (the first one sets its start). */
void cpuload_add(struct cpuload *c, const struct cpuload_sample *s);

/* Other runnable tasks beside ours on average; the share of CPU time stolen; the share of
 * their time the threads waited for a CPU (below 0 when unknown). */
double cpuload_others(const struct cpuload *c);
double cpuload_steal(const struct cpuload *c);
double cpuload_wait(const struct cpuload *c);

/* Whether the CPUs were busy in the interval (the thresholds above). */
bool cpuload_busy(const struct cpuload *c);

/* One line of what was measured: "2.0 other tasks runnable on average (at most 3) for 2 CPUs,
 * load average 3.1, steal 0%, the probe's threads waited 4% of their time for a CPU". */
void cpuload_line(const struct cpuload *c, const char *who, char *buf, size_t len);

#endif
