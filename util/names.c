/* SPDX-License-Identifier: MIT */
/*
 * The grammar of the names stagebench creates: the builders, and one parser that reads a name
 * from both ends, since host and node names may hold dots and dashes of their own.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "util/names.h"

static const char *const names_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
#define NAMES_NUNITS (sizeof(names_units) / sizeof(names_units[0]))

/* 0 when snprintf's n fitted in len bytes, -ENAMETOOLONG otherwise. */
static int names_fit(int n, size_t len)
{
	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

const char *names_kind_name(enum names_kind kind)
{
	static const char *const names[NAMES_COUNT] = {
	    [NAMES_NONE] = "none",
	    [NAMES_REPLICA] = "replica",
	    [NAMES_TEMP] = "temporary",
	    [NAMES_FILE] = "file",
	    [NAMES_PROBE] = "probe",
	    [NAMES_PROBE_TEMP] = "probe temporary",
	    [NAMES_PROBE_FILE] = "probe file",
	    [NAMES_WRITE_PROBE] = "write probe",
	    [NAMES_STATE_FILE] = "state",
	    [NAMES_STATE_TEMP] = "state temporary",
	    [NAMES_STATE_LOG] = "state log",
	    [NAMES_STATE_SUM] = "state summary",
	    [NAMES_OUT_TEMP] = "summary temporary",
	    [NAMES_LEASE_FILE] = "lease",
	    [NAMES_LEASE_TEMP] = "lease temporary",
	};

	return (unsigned)kind < NAMES_COUNT ? names[kind] : "?";
}

int names_replica(char *buf, size_t len, const char *test, uint64_t bytes)
{
	unsigned u = 0;

	/* The largest unit that divides the size exactly: "1536MiB", never "1.50GiB". */
	while (u + 1 < NAMES_NUNITS && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	return names_fit(snprintf(buf, len, NAMES_PREFIX "%s.%llu%s", test,
				  (unsigned long long)bytes, names_units[u]),
			 len);
}

static bool names_host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

int names_temp(char *buf, size_t len, const char *name, const char *host, long pid,
	       const char *token)
{
	char h[NAMES_HOST_MAX + 1];
	size_t i;

	for (i = 0; host && host[i] && i < NAMES_HOST_MAX; i++)
		h[i] = names_host_char(host[i]) && !(i == 0 && (host[i] == '.' || host[i] == '-'))
			   ? host[i]
			   : '_';
	h[i] = '\0';
	return names_fit(
	    snprintf(buf, len, "%s.tmp.%s.%ld.%s", name, i ? h : "localhost", pid, token), len);
}

int names_run_tag(char *buf, size_t len, long pid, const char *token)
{
	return names_fit(snprintf(buf, len, "p%ld-%s", pid, token), len);
}

int names_run_tag_rep(char *buf, size_t len, const char *run_tag, unsigned rep)
{
	return names_fit(snprintf(buf, len, "%s-r%u", run_tag, rep), len);
}

int names_file_prefix(char *buf, size_t len, const char *part, const char *node,
		      const char *run_tag_rep)
{
	return names_fit(snprintf(buf, len, NAMES_PREFIX "%s.%s.%s", part, node, run_tag_rep), len);
}

int names_file_thread(char *buf, size_t len, const char *prefix, unsigned thread, size_t *used)
{
	int n = snprintf(buf, len, "%s.t%u.", prefix, thread);

	*used = n > 0 ? (size_t)n : 0;
	return n >= 0 && (size_t)n + NAMES_SEQ_ROOM <= len ? 0 : -ENAMETOOLONG;
}

void names_file_seq(char *at, uint64_t seq)
{
	char digits[NAMES_SEQ_ROOM];
	int n = 0;

	do {
		digits[n++] = (char)('0' + seq % 10);
		seq /= 10;
	} while (seq);
	while (n < NAMES_SEQ_DIGITS)
		digits[n++] = '0';
	while (n)
		*at++ = digits[--n];
	*at = '\0';
}

int names_probe(char *buf, size_t len, long pid, const char *token)
{
	return names_fit(snprintf(buf, len, NAMES_PREFIX "check.probe.%ld.%s", pid, token), len);
}

int names_write_probe(char *buf, size_t len, long pid, const char *token)
{
	return names_fit(snprintf(buf, len, NAMES_PREFIX "check-write.%ld.%s", pid, token), len);
}

int names_out_temp(char *buf, size_t len, const char *path, long pid, const char *token)
{
	return names_fit(snprintf(buf, len, "%s.tmp.%ld.%s", path, pid, token), len);
}

int names_state_temp(char *buf, size_t len, long pid)
{
	return names_fit(snprintf(buf, len, NAMES_STATE ".tmp.%ld", pid), len);
}

int names_lease_temp(char *buf, size_t len, long pid)
{
	return names_fit(snprintf(buf, len, NAMES_LEASE ".tmp.%ld", pid), len);
}

/*
 * The parser. A span is s[at..end) of the name; "take" functions take a piece off its front
 * or its back and return false, taking nothing, when the piece is not there.
 */
struct names_span {
	const char *s;
	size_t at, end;
};

static bool names_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Take lit off the back. */
static bool names_back_lit(struct names_span *p, const char *lit)
{
	size_t n = strlen(lit);

	if (p->end - p->at < n || memcmp(p->s + p->end - n, lit, n) != 0)
		return false;
	p->end -= n;
	return true;
}

/* The value of the n digits at d, or false when it does not fit in 64 bits. */
static bool names_value(const char *d, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < n; i++) {
		if (x > (UINT64_MAX - (uint64_t)(d[i] - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(d[i] - '0');
	}
	*v = x;
	return true;
}

/* Take min to max digits off the back: all the digits there are, none left before them. */
static bool names_back_digits(struct names_span *p, size_t min, size_t max, uint64_t *v)
{
	size_t e = p->end;

	while (e > p->at && names_digit(p->s[e - 1]) && p->end - e <= max)
		e--;
	size_t n = p->end - e;
	if (n < min || n > max || !names_value(p->s + e, n, v))
		return false;
	p->end = e;
	return true;
}

/* Take sep and a token off the back; the token into f. */
static bool names_back_token(struct names_span *p, const char *sep, struct names_fields *f)
{
	struct names_span q = *p;

	if (q.end - q.at < NAMES_TOKEN_LEN)
		return false;
	q.end -= NAMES_TOKEN_LEN;
	for (size_t i = q.end; i < q.end + NAMES_TOKEN_LEN; i++) {
		if (!names_digit(q.s[i]) && !(q.s[i] >= 'a' && q.s[i] <= 'f'))
			return false;
	}
	if (!names_back_lit(&q, sep))
		return false;
	memcpy(f->token, q.s + q.end + strlen(sep), NAMES_TOKEN_LEN);
	f->token[NAMES_TOKEN_LEN] = '\0';
	f->has_token = true;
	*p = q;
	return true;
}

/* Take lit off the front. */
static bool names_front_lit(struct names_span *p, const char *lit)
{
	size_t n = strlen(lit);

	if (p->end - p->at < n || memcmp(p->s + p->at, lit, n) != 0)
		return false;
	p->at += n;
	return true;
}

/* The whole span is a host or node name; copied into f->host. */
static bool names_host(const struct names_span *p, struct names_fields *f)
{
	size_t n = p->end - p->at;
	const char *h = p->s + p->at;

	if (n < 1 || n > NAMES_HOST_MAX || h[0] == '.' || h[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!names_host_char(h[i]))
			return false;
	}
	memcpy(f->host, h, n);
	f->host[n] = '\0';
	return true;
}

/* Take "<digits><unit>" (a replica's size) off the front, into f->bytes. */
static bool names_front_size(struct names_span *p, struct names_fields *f)
{
	size_t n = 0;
	uint64_t v;

	while (p->at + n < p->end && names_digit(p->s[p->at + n]))
		n++;
	if (n < 1 || n > 20 || !names_value(p->s + p->at, n, &v))
		return false;
	for (size_t u = 0; u < NAMES_NUNITS; u++) {
		struct names_span q = {p->s, p->at + n, p->end};
		if (!names_front_lit(&q, names_units[u]) || (q.at != q.end && q.s[q.at] != '.'))
			continue;
		if (v > (UINT64_MAX >> (10 * u)))
			return false;
		f->bytes = v << (10 * u);
		p->at = q.at;
		return true;
	}
	return false;
}

/* ".tmp.<host>.<pid>.<token>", or the older ".tmp.<host>.<pid>", is all that is left. */
static bool names_temp_tail(struct names_span p, bool token_needed, struct names_fields *f)
{
	struct names_span q;

	if (!names_front_lit(&p, ".tmp."))
		return false;
	q = p;
	if (names_back_token(&q, ".", f) && names_back_digits(&q, 1, 10, &f->pid) &&
	    names_back_lit(&q, ".") && names_host(&q, f))
		return true;
	f->has_token = false;
	if (token_needed)
		return false;
	q = p;
	return names_back_digits(&q, 1, 10, &f->pid) && names_back_lit(&q, ".") &&
	       names_host(&q, f);
}

/* "<node>.p<pid>[-<token>]-r<rep>.t<thread>.<seq>" is all that is left (after the part). */
static bool names_file_tail(struct names_span p, struct names_fields *f)
{
	if (!names_back_digits(&p, NAMES_SEQ_DIGITS, 20, &f->seq) || !names_back_lit(&p, ".") ||
	    !names_back_digits(&p, 1, 10, &f->thread) || !names_back_lit(&p, ".t") ||
	    !names_back_digits(&p, 1, 10, &f->rep) || !names_back_lit(&p, "-r"))
		return false;
	names_back_token(&p, "-", f);
	return names_back_digits(&p, 1, 10, &f->pid) && names_back_lit(&p, ".p") &&
	       names_host(&p, f);
}

/* "<pid>.<token>" is all that is left. */
static bool names_pid_token(struct names_span p, struct names_fields *f)
{
	return names_back_token(&p, ".", f) && names_back_digits(&p, 1, 10, &f->pid) &&
	       p.at == p.end;
}

/* After "stagebench.check.": the probe replica or its temporary. */
static enum names_kind names_probe_parse(struct names_span p, struct names_fields *f)
{
	const char *tmp;

	if (!names_front_lit(&p, "probe."))
		return NAMES_NONE;
	tmp = strstr(p.s + p.at, ".tmp.");
	if (!tmp)
		return names_pid_token(p, f) ? NAMES_PROBE : NAMES_NONE;
	struct names_span head = {p.s, p.at, (size_t)(tmp - p.s)};
	struct names_span tail = {p.s, (size_t)(tmp - p.s), p.end};
	struct names_fields own = *f;
	if (!names_pid_token(head, &own))
		return NAMES_NONE;
	return names_temp_tail(tail, true, f) ? NAMES_PROBE_TEMP : NAMES_NONE;
}

/* The word of a test or part: 1 to NAMES_WORD_MAX of [a-z0-9]. */
static bool names_word(const char *w)
{
	size_t n = strlen(w);

	if (n < 1 || n > NAMES_WORD_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!names_digit(w[i]) && !(w[i] >= 'a' && w[i] <= 'z'))
			return false;
	}
	return true;
}

/* After "stagebench.<head>." of a test or part: a replica, its temporary or a kind's file. */
static enum names_kind names_body(struct names_span p, struct names_fields *f)
{
	struct names_span q = p;
	struct names_fields got = *f;

	if (!memchr(p.s + p.at, '.', p.end - p.at)) {
		f->exact = names_front_size(&q, f) && q.at == q.end;
		if (!f->exact)
			f->bytes = 0;
		return p.at < p.end ? NAMES_REPLICA : NAMES_NONE;
	}
	if (names_front_size(&q, &got) && names_temp_tail(q, false, &got)) {
		*f = got;
		return NAMES_TEMP;
	}
	got = *f;
	if (names_file_tail(p, &got)) {
		*f = got;
		return strcmp(f->head, NAMES_PROBE_PART) == 0 ? NAMES_PROBE_FILE : NAMES_FILE;
	}
	return NAMES_NONE;
}

/* Under "stagebench.": the head, then what follows it. */
static enum names_kind names_stagebench(const char *name, struct names_fields *f)
{
	const char *rest = name + strlen(NAMES_PREFIX);
	size_t n = strcspn(rest, ".");
	struct names_span p = {name, (size_t)(rest - name) + n + 1, strlen(name)};

	f->tmp = strstr(rest, ".tmp.") != NULL;
	if (n <= NAMES_WORD_MAX) {
		memcpy(f->head, rest, n);
		f->head[n] = '\0';
	}
	if (!rest[n] || !f->head[0])
		return NAMES_NONE;
	if (strcmp(f->head, "check") == 0)
		return names_probe_parse(p, f);
	if (strcmp(f->head, "check-write") == 0)
		return names_pid_token(p, f) ? NAMES_WRITE_PROBE : NAMES_NONE;
	return names_word(f->head) ? names_body(p, f) : NAMES_NONE;
}

enum names_kind names_parse(const char *name, struct names_fields *f)
{
	struct names_span p = {name, 0, strlen(name)};
	static const struct {
		const char *name;
		enum names_kind kind;
	} fixed[] = {{NAMES_STATE, NAMES_STATE_FILE},
		     {NAMES_LOG, NAMES_STATE_LOG},
		     {NAMES_SUMMARY, NAMES_STATE_SUM},
		     {NAMES_LEASE, NAMES_LEASE_FILE}};

	struct names_fields seen;

	memset(f, 0, sizeof(*f));
	f->exact = true;
	if (strncmp(name, NAMES_PREFIX, strlen(NAMES_PREFIX)) == 0 &&
	    (f->kind = names_stagebench(name, f)) != NAMES_NONE)
		return f->kind;
	/* What a failed try found is no field of the name: only its head and ".tmp." stay. */
	memset(&seen, 0, sizeof(seen));
	memcpy(seen.head, f->head, sizeof(seen.head));
	seen.tmp = f->tmp;
	*f = seen;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (strcmp(name, fixed[i].name) == 0)
			f->kind = fixed[i].kind;
	}
	if (f->kind == NAMES_NONE && names_front_lit(&p, NAMES_STATE ".tmp.") &&
	    names_back_digits(&p, 1, 10, &f->pid) && p.at == p.end)
		f->kind = NAMES_STATE_TEMP;
	p = (struct names_span){name, 0, strlen(name)};
	if (f->kind == NAMES_NONE && names_front_lit(&p, NAMES_LEASE ".tmp.") &&
	    names_back_digits(&p, 1, 10, &f->pid) && p.at == p.end)
		f->kind = NAMES_LEASE_TEMP;
	p = (struct names_span){name, 0, strlen(name)};
	if (f->kind == NAMES_NONE && names_back_token(&p, ".", f) &&
	    names_back_digits(&p, 1, 10, &f->pid) && names_back_lit(&p, ".tmp.") && p.end > 0)
		f->kind = NAMES_OUT_TEMP;
	if (f->kind == NAMES_NONE)
		*f = seen;
	f->exact = f->kind != NAMES_NONE;
	return f->kind;
}

int names_result_node(char *buf, size_t len, const char *node)
{
	return names_fit(snprintf(buf, len, "%s.json", node), len);
}

int names_result_part(char *buf, size_t len, const char *node, const char *part, unsigned rep)
{
	if (!rep)
		return -EINVAL;
	return names_fit(snprintf(buf, len, "%s.%s.rep%u.json", node, part, rep), len);
}

/* ".<part>.rep<K>" off the back of p, into r: the part form's middle. */
static bool names_result_back_part(struct names_span *p, struct names_result *r)
{
	struct names_span q = *p;
	uint64_t rep;
	size_t e;

	if (!names_back_digits(&q, 1, 10, &rep) || q.s[q.end] == '0' || rep > UINT_MAX ||
	    !names_back_lit(&q, ".rep"))
		return false;
	e = q.end;
	while (q.end > q.at && q.s[q.end - 1] != '.')
		q.end--;
	if (q.end == q.at || e - q.end < 1 || e - q.end > NAMES_WORD_MAX)
		return false;
	memcpy(r->part, q.s + q.end, e - q.end);
	r->part[e - q.end] = '\0';
	if (!names_word(r->part))
		return false;
	q.end--; /* the dot before the part */
	r->rep = (unsigned)rep;
	*p = q;
	return true;
}

enum names_result_kind names_result_parse(const char *name, struct names_result *r)
{
	struct names_span p = {name, 0, strlen(name)};
	struct names_fields f;

	memset(r, 0, sizeof(*r));
	if (!names_back_lit(&p, ".json"))
		return NAMES_RESULT_NONE;
	struct names_span q = p;
	if (names_result_back_part(&q, r) && names_host(&q, &f)) {
		memcpy(r->node, f.host, sizeof(r->node));
		return r->kind = NAMES_RESULT_PART;
	}
	memset(r, 0, sizeof(*r));
	if (!names_host(&p, &f))
		return NAMES_RESULT_NONE;
	memcpy(r->node, f.host, sizeof(r->node));
	return r->kind = NAMES_RESULT_NODE;
}
