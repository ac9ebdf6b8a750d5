/* SPDX-License-Identifier: MIT */
/*
 * The names of every file stagebench creates, built and parsed by one grammar. In a working
 * directory (--dir) each name starts with "stagebench." and its first word, the head, says
 * whose it is:
 *
 *   a replica        stagebench.<test>.<size>                     stagebench.2.4GiB
 *   its temporary    <replica>.tmp.<host>.<pid>.<token>
 *   a kind's file    stagebench.<part>.<node>.p<pid>-<token>-r<rep>.t<thread>.<seq>
 *   check's probe    stagebench.check.probe.<pid>.<token>, and its temporary as a replica's
 *   check's files    stagebench.create.<node>.p<pid>-<token>-r<rep>.t<thread>.<seq>
 *   check's write    stagebench.check-write.<pid>.<token>
 *
 * Older versions wrote the temporary of a replica without ".<token>" and a kind's file without
 * "-<token>": those forms parse too. In the state directory of an armed run: "state",
 * "state.tmp.<pid>", "log", "summary.json"; beside a summary written to --out:
 * "<out>.tmp.<pid>.<token>".
 *
 * In a results directory (the launcher's, the collector's, `check --health`'s --results), a
 * node's summary is "<node>.json" and a launcher's summary of one part "<node>.<part>.rep<K>.json"
 * (<K>: 1 to 10 digits, no leading zero, from 1); a name of both forms is the second.
 *
 * <test>, <part>: 1 to 15 of [a-z0-9]; <size>: 1 to 20 digits and the largest binary unit
 * that divides it (B, KiB, MiB, GiB, TiB, PiB, EiB); <host>, <node>: 1 to 64 of
 * [A-Za-z0-9._-], not starting with '.' or '-'; <pid>, <rep>, <thread>: 1 to 10 digits;
 * <seq>: 6 to 20 digits; <token>: NAMES_TOKEN_LEN lowercase hex digits.
 *
 * Builders return 0, or -ENAMETOOLONG when the name does not fit in len bytes (buf is then
 * cut). Pure string work: no I/O, no state.
 */
#ifndef STAGEBENCH_NAMES_H
#define STAGEBENCH_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NAMES_PREFIX	"stagebench."
#define NAMES_TOKEN_LEN 12 /* the random token: lowercase hex digits */
#define NAMES_WORD_MAX	15 /* the longest test or part name */
#define NAMES_HOST_MAX	64 /* the longest host or node name */
/* The part of check's probe whose kind creates files (check's files above). */
#define NAMES_PROBE_PART "create"
/* The files of an armed run's state directory. */
#define NAMES_STATE   "state"
#define NAMES_LOG     "log"
#define NAMES_SUMMARY "summary.json"
#define NAMES_LEASE   "lease"
/* The sequence number of a kind's file has at least this many digits, so names sort. */
#define NAMES_SEQ_DIGITS 6
/* Room for the longest sequence number (20 digits) and the terminator. */
#define NAMES_SEQ_ROOM 21

enum names_kind {
	NAMES_NONE = 0,	   /* no name stagebench makes */
	NAMES_REPLICA,	   /* stagebench.<test>.<size> (exact false: a word, not a size) */
	NAMES_TEMP,	   /* the temporary of a replica */
	NAMES_FILE,	   /* a kind's file */
	NAMES_PROBE,	   /* check's probe replica */
	NAMES_PROBE_TEMP,  /* its temporary */
	NAMES_PROBE_FILE,  /* a file of check's create probe */
	NAMES_WRITE_PROBE, /* check's write probe */
	NAMES_STATE_FILE,  /* "state" */
	NAMES_STATE_TEMP,  /* "state.tmp.<pid>" */
	NAMES_STATE_LOG,   /* "log" */
	NAMES_STATE_SUM,   /* "summary.json" */
	NAMES_OUT_TEMP,	   /* "<out>.tmp.<pid>.<token>" */
	NAMES_LEASE_FILE,  /* "lease" */
	NAMES_LEASE_TEMP,  /* "lease.tmp.<pid>" */
	NAMES_COUNT
};

/* What names_parse() found in a name. */
struct names_fields {
	enum names_kind kind;
	/*
	 * Any name under "stagebench.": its head (the test, the part, "check", "check-write"; ""
	 * when longer than NAMES_WORD_MAX), and whether ".tmp." is in it, even when it is no name
	 * stagebench makes (kind NAMES_NONE).
	 */
	char head[NAMES_WORD_MAX + 1];
	bool tmp;
	bool exact;	/* NAMES_REPLICA: <size> is a size; true for every other kind */
	uint64_t bytes; /* NAMES_REPLICA, NAMES_TEMP: the replica's size */
	char host[NAMES_HOST_MAX + 1]; /* temporaries: the writer's host; files: the node */
	uint64_t pid;		       /* of the process that made it (the last one named) */
	bool has_token;		       /* false: an older name without one */
	char token[NAMES_TOKEN_LEN + 1];
	uint64_t rep, thread, seq; /* files */
};

/*
 * Parse name: its kind (also in f->kind) and its fields. Never fails: a name that is none of
 * the grammar's is NAMES_NONE.
 */
enum names_kind names_parse(const char *name, struct names_fields *f);

/* "replica", "temporary", "file", ...: the kind's name in messages and tests. */
const char *names_kind_name(enum names_kind kind);

/* stagebench.<test>.<size> of a replica of bytes bytes: "stagebench.2.4GiB", "...1536MiB". */
int names_replica(char *buf, size_t len, const char *test, uint64_t bytes);

/*
 * <name>.tmp.<host>.<pid>.<token>: the temporary of a replica (or of the probe). A host name
 * that is not one of the grammar's has its other characters made '_' ("localhost" if empty).
 */
int names_temp(char *buf, size_t len, const char *name, const char *host, long pid,
	       const char *token);

/* The tag of a run, "p<pid>-<token>", and of one of its repetitions, "<tag>-r<rep>". */
int names_run_tag(char *buf, size_t len, long pid, const char *token);
int names_run_tag_rep(char *buf, size_t len, const char *run_tag, unsigned rep);

/*
 * The prefix of a kind's files in a part, "stagebench.<part>.<node>.<tag of the repetition>",
 * which the driver hands the kind; the kind's thread adds ".t<thread>." with
 * names_file_thread (*used: its length) and each file its number with names_file_seq.
 */
int names_file_prefix(char *buf, size_t len, const char *part, const char *node,
		      const char *run_tag_rep);
int names_file_thread(char *buf, size_t len, const char *prefix, unsigned thread, size_t *used);

/*
 * Write seq with at least NAMES_SEQ_DIGITS digits and a terminator at at (room for
 * NAMES_SEQ_ROOM bytes): no formatting, no allocation, for a timed loop.
 */
void names_file_seq(char *at, uint64_t seq);

/* check's probe replica and write probe: stagebench.check.probe.<pid>.<token> and
 * stagebench.check-write.<pid>.<token>. */
int names_probe(char *buf, size_t len, long pid, const char *token);
int names_write_probe(char *buf, size_t len, long pid, const char *token);

/* The temporary of a file written whole then renamed: "<path>.tmp.<pid>.<token>" (--out). */
int names_out_temp(char *buf, size_t len, const char *path, long pid, const char *token);

/* The temporary of an armed run's state file: "state.tmp.<pid>"; of its lease: "lease.tmp.<pid>".
 */
int names_state_temp(char *buf, size_t len, long pid);
int names_lease_temp(char *buf, size_t len, long pid);

/* The summaries of a results directory (above). */
enum names_result_kind {
	NAMES_RESULT_NONE = 0, /* no summary's name */
	NAMES_RESULT_NODE,     /* "<node>.json" */
	NAMES_RESULT_PART,     /* "<node>.<part>.rep<K>.json" */
};

struct names_result {
	enum names_result_kind kind;
	char node[NAMES_HOST_MAX + 1];
	char part[NAMES_WORD_MAX + 1]; /* NAMES_RESULT_PART */
	unsigned rep;		       /* NAMES_RESULT_PART: from 1 */
};

/* "<node>.json" and "<node>.<part>.rep<K>.json"; -EINVAL for a rep of 0. */
int names_result_node(char *buf, size_t len, const char *node);
int names_result_part(char *buf, size_t len, const char *node, const char *part, unsigned rep);

/* Parse a results directory's name into r (also its kind); never fails: NAMES_RESULT_NONE. */
enum names_result_kind names_result_parse(const char *name, struct names_result *r);

#endif
