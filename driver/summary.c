/* SPDX-License-Identifier: MIT */
/*
 * Writers of the node summary. Every number printed is computed in result.c; this file only
 * formats. The JSON field names are the contract of DESIGN.md and README.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/note.h"
#include "driver/summary.h"
#include "util/cpulist.h"
#include "util/json.h"
#include "util/size.h"

double summary_rate(uint64_t n, double seconds)
{
	return seconds > 0 ? (double)n / seconds : 0.0;
}

bool summary_timed_passes(const struct part_result *pr)
{
	unsigned caps = pr->pp->ops ? pr->pp->ops->caps : 0;

	return (caps & BENCH_READS_REPLICA) && !(caps & BENCH_MAPS_REPLICA) && pr->pp->p.passes;
}

bool summary_counts_pages(const struct part_result *pr)
{
	return pr->pp->ops && (pr->pp->ops->caps & BENCH_MAPS_REPLICA);
}

const char *summary_op_name(const struct part_result *pr)
{
	unsigned caps = pr->pp->ops ? pr->pp->ops->caps : 0;

	if (caps & BENCH_WRITES_FILES)
		return "file";
	if ((caps & BENCH_MAPS_REPLICA) || summary_timed_passes(pr))
		return "pass";
	if (caps & BENCH_READS_REPLICA)
		return "chunk";
	return "operation";
}

/* The rate of a part with its unit: bytes read or written per second, or 1b's pages. */
static const char *summary_text_rate(const struct part_result *pr, char *buf, size_t len)
{
	if (summary_counts_pages(pr)) {
		double r = summary_rate(pr->pages, pr->node_time_s);

		if (r >= 1e6)
			snprintf(buf, len, "%.2f Mpage/s", r / 1e6);
		else
			snprintf(buf, len, "%.1f kpage/s", r / 1e3);
		return buf;
	}
	return size_format_rate(summary_rate(pr->bytes, pr->node_time_s), buf, len);
}

static const char *summary_time(double s, char *buf, size_t len)
{
	if (s <= 0)
		snprintf(buf, len, "-");
	else if (s < 1e-6)
		snprintf(buf, len, "%.0f ns", s * 1e9);
	else if (s < 1e-3)
		snprintf(buf, len, "%.1f us", s * 1e6);
	else if (s < 1.0)
		snprintf(buf, len, "%.2f ms", s * 1e3);
	else
		snprintf(buf, len, "%.3f s", s);
	return buf;
}

static const char *summary_wall(double epoch, char *buf, size_t len)
{
	time_t t = (time_t)epoch;
	struct tm tm;

	gmtime_r(&t, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03d UTC", (int)((epoch - (double)t) * 1000.0));
	return buf;
}

/* The threads' CPUs (core false) or cores, as a CPU list. */
static void summary_slot_list(const struct topo_plan *tp, bool core, char *buf, size_t len)
{
	unsigned *cpus = calloc(tp->nslots + 1, sizeof(*cpus));

	if (!cpus) {
		snprintf(buf, len, "?");
		return;
	}
	for (size_t i = 0; i < tp->nslots; i++)
		cpus[i] = core ? tp->slots[i].core : tp->slots[i].pu;
	/* cpulist_format wants them ascending. */
	for (size_t i = 1; i < tp->nslots; i++)
		for (size_t j = i; j > 0 && cpus[j - 1] > cpus[j]; j--) {
			unsigned x = cpus[j];
			cpus[j] = cpus[j - 1];
			cpus[j - 1] = x;
		}
	cpulist_format(cpus, tp->nslots, buf, len);
	free(cpus);
}

void summary_cpus(const struct topo_plan *tp, char *buf, size_t len)
{
	summary_slot_list(tp, false, buf, len);
}

void summary_cores(const struct topo_plan *tp, char *buf, size_t len)
{
	summary_slot_list(tp, true, buf, len);
}

void summary_text_clock(const struct node_result *res, FILE *f)
{
	if (!res->ntp_ok) {
		fprintf(f, "clock: NTP state unknown (ntp_adjtime failed)\n");
		return;
	}
	fprintf(f, "clock: %s (maxerror %ld us, esterror %ld us, clocksource %s)\n",
		res->ntp.synchronized ? "NTP-synchronized" : "NOT NTP-synchronized",
		res->ntp.maxerror_us, res->ntp.esterror_us,
		res->ntp.clocksource[0] ? res->ntp.clocksource : "unknown");
}

double summary_deviation(const struct part_result *pr, const struct thread_result *r)
{
	double med = pr->thread_time.median;

	return med > 0 && r->ran ? r->time_s / med - 1.0 : 0.0;
}

/* Threads more than SUMMARY_OUTLIER off the median, with their CPU: a slow core shows. */
void summary_buffer_line(const struct bufplace *bp, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%zu bytes past a page boundary (%s", bp->offset,
			 bp->calibrated ? "calibrated; GiB/s copied from a memory file at"
			 : bp->fixed	? "--buffer-offset"
					: "the calibration failed: page-aligned");

	for (size_t i = 0; bp->calibrated && i < BUFPLACE_NCAND && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s %zu: %.1f", i ? "," : "",
			      bufplace_candidates[i], bp->rate_Bps[i] / (1024.0 * 1024.0 * 1024.0));
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ")");
}

static void summary_text_outliers(const struct part_result *pr, FILE *f)
{
	char a[32], b[32];

	for (size_t i = 0; pr->threads && i < pr->nthreads; i++) {
		const struct thread_result *r = &pr->threads[i];
		double d = summary_deviation(pr, r);

		if (d > SUMMARY_OUTLIER || d < -SUMMARY_OUTLIER)
			fprintf(f, "     ^ thread %u on CPU %u: %s, %.0f%% %s than the median %s\n",
				r->index, r->cpu, summary_time(r->time_s, a, sizeof(a)),
				d > 0 ? d * 100.0 : -d * 100.0, d > 0 ? "slower" : "faster",
				summary_time(pr->thread_time.median, b, sizeof(b)));
	}
}

/* 1a: the first pass, which may come from the server, apart from the other passes. */
static void summary_text_passes(const struct part_result *pr, FILE *f)
{
	char a[32], b[32], c[32];

	if (!summary_timed_passes(pr) || !pr->nfirst_pass)
		return;
	fprintf(f, "     ^ first pass: %s min, %s median, %s max over threads",
		summary_time(pr->first_pass.min, a, sizeof(a)),
		summary_time(pr->first_pass.median, b, sizeof(b)),
		summary_time(pr->first_pass.max, c, sizeof(c)));
	if (pr->nrest_pass)
		fprintf(f, "; other passes (each thread's median): %s min, %s median, %s max",
			summary_time(pr->rest_pass.min, a, sizeof(a)),
			summary_time(pr->rest_pass.median, b, sizeof(b)),
			summary_time(pr->rest_pass.max, c, sizeof(c)));
	fputc('\n', f);
}

/* What each column counts, and in which unit. */
static void summary_text_legend(FILE *f)
{
	fprintf(f, "\nrate: bytes read or written per second of node time (1b: pages touched per "
		   "second; it maps its bytes, one byte read a page)\n"
		   "ops/s: passes (1a, 1b), chunks (2, 3) or files (4) per second of node time\n"
		   "spread: of the threads' releases; cache: share of the replica in this node's "
		   "page cache at the release, after the node dropped its own pages\n");
}

void summary_text(const struct node_result *res, FILE *f)
{
	char a[64], b[64], c[64], d[64], e[64], g[64], h[64], cpus[256], wall[64];

	summary_cpus(&res->tplan, cpus, sizeof(cpus));
	fprintf(f, "stagebench %s  node %s  %zu thread%s on CPUs %s\n", STAGEBENCH_VERSION,
		res->node, res->tplan.nslots, res->tplan.nslots == 1 ? "" : "s", cpus);
	if (res->fs_ok)
		fprintf(f, "dir: %s (%s on %s, %s free)\n", res->dir, res->fs.type, res->fs.source,
			size_format(res->fs.bytes_free, a, sizeof(a)));
	summary_text_clock(res, f);
	fprintf(f, "start: %s  seed %llu\n\n", summary_wall(res->start_at, wall, sizeof(wall)),
		(unsigned long long)res->seed);
	fprintf(f, "%-4s %-4s %3s %-7s %10s %10s %10s %10s %13s %10s %10s %10s %9s %7s\n", "test",
		"part", "rep", "status", "node time", "thr min", "thr median", "thr max", "rate",
		"ops/s", "lat p50", "lat p99", "spread", "cache");
	for (size_t i = 0; i < res->ntests; i++) {
		const struct test_result *tr = &res->tests[i];

		for (size_t k = 0; k < tr->nparts; k++) {
			const struct part_result *pr = &res->parts[tr->first_part + k];
			uint64_t p50 = pr->hist ? hist_quantile(pr->hist, 0.5) : 0;
			uint64_t p99 = pr->hist ? hist_quantile(pr->hist, 0.99) : 0;
			char cache[16] = "-";

			if (pr->residency >= 0)
				snprintf(cache, sizeof(cache), "%.0f%%", pr->residency * 100.0);
			else if (pr->cache_cold_expected)
				snprintf(cache, sizeof(cache), "unknown");
			fprintf(f,
				"%-4s %-4s %3u %-7s %10s %10s %10s %10s %13s %10.0f %10s %10s %9s "
				"%7s\n",
				tr->pt->def->name, pr->pp->def->name, tr->repetition,
				result_status_name(pr->status),
				summary_time(pr->node_time_s, a, sizeof(a)),
				summary_time(pr->thread_time.min, b, sizeof(b)),
				summary_time(pr->thread_time.median, c, sizeof(c)),
				summary_time(pr->thread_time.max, d, sizeof(d)),
				summary_text_rate(pr, e, sizeof(e)),
				summary_rate(pr->ops, pr->node_time_s),
				summary_time((double)p50 / 1e9, g, sizeof(g)),
				summary_time((double)p99 / 1e9, h, sizeof(h)),
				summary_time(pr->release_spread_s, wall, sizeof(wall)), cache);
			summary_text_passes(pr, f);
			summary_text_outliers(pr, f);
		}
		fprintf(f, "%-4s %-4s %3u %-7s %10s   result = sum of the parts' node times%s\n",
			tr->pt->def->name, "sum", tr->repetition, result_status_name(tr->status),
			summary_time(tr->result_s, a, sizeof(a)),
			tr->prepared ? "; replica created before the run" : "");
	}
	summary_text_legend(f);
	for (size_t i = 0; i < res->nwarnings; i++)
		fprintf(f, "warning: %s\n", res->warnings[i]);
	for (size_t i = 0; i < res->nerrors; i++)
		fprintf(f, "error: %s\n", res->errors[i]);
	/* The JSON's word, then the exit status and, when it says more, the outcome's name. */
	const char *word = summary_status_name(res->outcome);
	const char *name = outcome_name(res->outcome);
	if (res->outcome == OUTCOME_OK)
		fprintf(f, "status: ok\n");
	else if (strcmp(word, name) == 0)
		fprintf(f, "status: %s (exit %d)\n", word, outcome_exit_code(res->outcome));
	else
		fprintf(f, "status: %s (exit %d: %s)\n", word, outcome_exit_code(res->outcome),
			name);
}

const char *summary_status_name(enum outcome out)
{
	if (out == OUTCOME_OK)
		return "ok";
	if (out == OUTCOME_ORPHANED)
		return "orphaned";
	return out >= OUTCOME_INTERRUPTED_INT ? "interrupted" : "failed";
}

/* A CSV cell of a number: empty where it does not apply (or is unknown). */
static void summary_csv_cell(FILE *f, const char *fmt, double v, bool applies)
{
	fputc(',', f);
	if (applies)
		fprintf(f, fmt, v);
}

/*
 * One line per part. Columns after start_at were added with stagebench.node/2: rates name
 * their unit and what was counted. A cell is empty where its field does not apply to the part
 * or is not known: bandwidth_Bps for 1b (its bytes are mapped, its rate is pages_per_s and
 * mapped_Bps, which are empty for every other part), the rates of a part without a node time,
 * the latencies of a part without operations timed, the pass times of a part without passes,
 * an unknown residency or I/O start spread.
 */
void summary_csv(const struct node_result *res, FILE *f)
{
	fprintf(f, "node,test,repetition,part,status,node_time_s,thread_min_s,thread_median_s,"
		   "thread_max_s,release_spread_s,bytes,ops,bandwidth_Bps,ops_per_s,latency_p50_s,"
		   "latency_p99_s,cache_residency,start_at,op,pages_per_s,mapped_Bps,"
		   "io_start_spread_s,late,late_by_s,first_pass_median_s,rest_pass_median_s,"
		   "cache_dropped\n");
	for (size_t i = 0; i < res->nparts; i++) {
		const struct part_result *pr = &res->parts[i];
		bool timed = pr->node_time_s > 0, lat = pr->hist && pr->hist->count > 0;
		uint64_t p50 = lat ? hist_quantile(pr->hist, 0.5) : 0;
		uint64_t p99 = lat ? hist_quantile(pr->hist, 0.99) : 0;
		bool pages = summary_counts_pages(pr);
		double bps = summary_rate(pr->bytes, pr->node_time_s);

		fprintf(f, "%s,%s,%u,%s,%s,%.9f,%.9f,%.9f,%.9f,%.9f,%llu,%llu", res->node,
			pr->pt->def->name, pr->repetition, pr->pp->def->name,
			result_status_name(pr->status), pr->node_time_s, pr->thread_time.min,
			pr->thread_time.median, pr->thread_time.max, pr->release_spread_s,
			(unsigned long long)pr->bytes, (unsigned long long)pr->ops);
		summary_csv_cell(f, "%.1f", bps, timed && !pages);
		summary_csv_cell(f, "%.1f", summary_rate(pr->ops, pr->node_time_s), timed);
		summary_csv_cell(f, "%.9f", (double)p50 / 1e9, lat);
		summary_csv_cell(f, "%.9f", (double)p99 / 1e9, lat);
		summary_csv_cell(f, "%.4f", pr->residency, pr->residency >= 0);
		fprintf(f, ",%.6f,%s", pr->start_at, summary_op_name(pr));
		summary_csv_cell(f, "%.1f", summary_rate(pr->pages, pr->node_time_s),
				 timed && pages);
		summary_csv_cell(f, "%.1f", bps, timed && pages);
		summary_csv_cell(f, "%.9f", pr->io_start_spread_s, pr->io_start_spread_s >= 0);
		fprintf(f, ",%s,%.9f", pr->late || pr->status == PART_LATE ? "true" : "false",
			pr->late_by_s);
		summary_csv_cell(f, "%.9f", pr->first_pass.median, pr->nfirst_pass > 0);
		summary_csv_cell(f, "%.9f", pr->rest_pass.median, pr->nrest_pass > 0);
		fprintf(f, ",%s\n", pr->cache_dropped ? "true" : "false");
	}
}
