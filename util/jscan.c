/* SPDX-License-Identifier: MIT */
/*
 * The collector's fast door (jscan.h): a validating recursive scan of a summary that copies the
 * text but for the thread plan, the per_thread arrays and the histogram buckets, and reduces
 * those as scripts/stagebench/summaries.py's fast path does, value for value: what it cannot
 * reduce exactly so, it declines.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/jscan.h"

/* Deeper nesting is declined (no summary nests deeper than 8). */
#define JSCAN_MAX_DEPTH 64
/*
 * An object with more keys than this is declined: every object's keys are compared, so that
 * the text handed on holds no repeated key (the collector parses it without that check).
 */
#define JSCAN_MAX_KEYS 128
/* The reader's bounds (summaries.py MAX_SECONDS, MAX_EPOCH), and integers a double holds. */
#define JSCAN_MAX_SECONDS 1e7
#define JSCAN_MAX_EPOCH	  1e11
#define JSCAN_EXACT_INT	  (INT64_C(1) << 53)

/* Where a value sits: the paths whose arrays are taken, everything else generic. */
enum jscan_ctx { CTX_ANY, CTX_ROOT, CTX_TESTS, CTX_TEST, CTX_PARTS, CTX_PART, CTX_HIST };

enum jscan_type { JT_NONE, JT_INT, JT_FLOAT, JT_NULL, JT_OTHER };

/* A scalar as the reduction needs it: an integer an int64 holds, a finite double. */
struct jscan_val {
	enum jscan_type type;
	int64_t i;
	double d;
};

/* One per_thread entry. */
struct jscan_thread {
	struct jscan_val f[8];
};

/* The fields of a thread the reader takes, in jscan_thread.f's order. */
/* clang-format off */
#define JSCAN_KEY_NAME(word) {word, sizeof(word) - 1}
static const struct {
	const char *name;
	size_t len;
} jscan_thread_keys[8] = {
    JSCAN_KEY_NAME("time_s"), JSCAN_KEY_NAME("release_at"),    JSCAN_KEY_NAME("index"),
    JSCAN_KEY_NAME("cpu"),    JSCAN_KEY_NAME("error"),         JSCAN_KEY_NAME("release_at_ns"),
    JSCAN_KEY_NAME("ops"),    JSCAN_KEY_NAME("bytes"),
};
/* clang-format on */
enum { TF_TIME, TF_REL, TF_INDEX, TF_CPU, TF_ERROR, TF_RELNS, TF_OPS, TF_BYTES };

/*
 * The separators of objects written as the binary writes them (jscan_as_written), learned from
 * the last one read: the white space after "{" and each "," (w) and after each ":" (sp), and
 * for each key after the first its separator "," w "\"key\":" sp.
 */
#define JSCAN_SEP_SPACE 48
#define JSCAN_SEP_KEYS	16
struct jscan_seps {
	const void *table; /* the keys the separators are of; NULL: none learned */
	char w[JSCAN_SEP_SPACE], sp[JSCAN_SEP_SPACE];
	size_t wlen, splen;
	/* ",", white space, the key (32: with its quotes and colon), white space */
	char sep[JSCAN_SEP_KEYS][1 + 2 * JSCAN_SEP_SPACE + 32];
	size_t len[JSCAN_SEP_KEYS];
};

struct jscan {
	const char *p, *e;
	const char *copied; /* the text before this is in text */
	struct jscan_buf text, blocks;
	uint32_t nblocks;
	unsigned top;
	int depth;
	struct jscan_thread *th; /* a per_thread array's entries, reused */
	size_t nth, capth;
	int64_t *pairs; /* a buckets array's [index, count], reused */
	size_t npairs, cappairs;
	struct jscan_seps thread_seps, plan_seps;
	double *times; /* a per_thread array's times, and as many to sort them through, reused */
	size_t captimes;
};

void jscan_buf_free(struct jscan_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int jscan_buf_put(struct jscan_buf *b, const void *src, size_t n)
{
	if (n == 0)
		return 0;
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap - b->len < n)
			cap *= 2;
		unsigned char *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
	return 0;
}

static int jscan_put_u8(struct jscan_buf *b, unsigned v)
{
	unsigned char c = (unsigned char)v;
	return jscan_buf_put(b, &c, 1);
}

static int jscan_put_u32(struct jscan_buf *b, size_t v)
{
	uint32_t x = (uint32_t)v;
	return jscan_buf_put(b, &x, sizeof(x));
}

static int jscan_put_f64(struct jscan_buf *b, double v)
{
	return jscan_buf_put(b, &v, sizeof(v));
}

static int jscan_put_i64(struct jscan_buf *b, int64_t v)
{
	return jscan_buf_put(b, &v, sizeof(v));
}

/* A byte's class, two bits: 1, JSON allows it between tokens; 2, it ends a plain string's text
 * (a control byte, '"', a backslash, a byte outside ASCII). */
/* clang-format off */
#define JSCAN_C8(a) a, a, a, a, a, a, a, a
#define JSCAN_C32(a) JSCAN_C8(a), JSCAN_C8(a), JSCAN_C8(a), JSCAN_C8(a)
static const unsigned char jscan_class[256] = {
    2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 2, 2, 3, 2, 2, /* \t \n \r */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* */
    1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* ' ' '"' */
    JSCAN_C32(0),					    /* 0x30-0x4f */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, /* 0x5c a backslash */
    JSCAN_C32(0),					    /* 0x60-0x7f */
    JSCAN_C32(2), JSCAN_C32(2), JSCAN_C32(2), JSCAN_C32(2),
};
/* clang-format on */

/*
 * Eight bytes at a time, the first byte the lowest (swapped on a big-endian machine):
 * jscan_first gives the offset of the first byte whose mark bit (0x80) is set in m, m not 0.
 */
#define JSCAN_ONES  UINT64_C(0x0101010101010101)
#define JSCAN_HIGHS UINT64_C(0x8080808080808080)

static inline uint64_t jscan_load(const char *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof(w));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

static inline size_t jscan_first(uint64_t m)
{
	return (size_t)__builtin_ctzll(m) >> 3;
}

/* Past the spaces at p (an indentation). */
static inline const char *jscan_spaces(const char *p, const char *e)
{
	while (e - p >= 8) {
		uint64_t other = jscan_load(p) ^ (JSCAN_ONES * ' ');
		if (other) {
			/* the first byte that is not a space: a nonzero byte of other */
			uint64_t m =
			    (((other & ~JSCAN_HIGHS) + ~JSCAN_HIGHS) | other) & JSCAN_HIGHS;
			return p + jscan_first(m);
		}
		p += 8;
	}
	while (p < e && *p == ' ')
		p++;
	return p;
}

static void jscan_ws_run(struct jscan *s)
{
	const char *p = s->p;
	while (p < s->e && (jscan_class[(unsigned char)*p] & 1)) {
		if (*p++ == '\n')
			p = jscan_spaces(p, s->e); /* an indentation after a newline */
	}
	s->p = p;
}

/* Past white space (inline: most tokens have none before them). */
static inline void jscan_ws(struct jscan *s)
{
	if (s->p < s->e && (jscan_class[(unsigned char)*s->p] & 1))
		jscan_ws_run(s);
}

/* At '"': the string's text (no escape, ASCII, no control byte), s->p after it. */
static int jscan_string(struct jscan *s, const char **start, size_t *len)
{
	const char *p = s->p + 1;
	while (p < s->e && !(jscan_class[(unsigned char)*p] & 2))
		p++;
	if (p >= s->e || *p != '"')
		return -EINVAL;
	*start = s->p + 1;
	*len = (size_t)(p - *start);
	s->p = p + 1;
	return 0;
}

static const double jscan_pow10[23] = {1e0,  1e1,  1e2,	 1e3,  1e4,  1e5,  1e6,	 1e7,
				       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
				       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 jscan_u128;

/* How many bits x takes. */
static int jscan_bits(jscan_u128 x)
{
	uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
	if (hi)
		return 128 - __builtin_clzll(hi);
	return lo ? 64 - __builtin_clzll(lo) : 0;
}
#endif

int jscan_decimal(uint64_t mant, int k, double *out)
{
#ifdef __SIZEOF_INT128__
	if (k < 0 || k > JSCAN_DECIMAL_MAX_K)
		return -ENOTSUP;
	if (mant == 0) {
		*out = 0;
		return 0;
	}
	jscan_u128 d = 1;
	for (int i = 0; i < k; i++)
		d *= 10;
	int bm = 64 - __builtin_clzll(mant), bd = jscan_bits(d);
	/*
	 * q = (mant << sh) / d holds 54 bits or more (mant << sh < 2^(54 + bd) <= 2^125 for
	 * 10^21 < 2^70): its top 53 bits rounded by the rest of it and the remainder.
	 */
	int sh = 54 + bd - bm > 0 ? 54 + bd - bm : 0;
	jscan_u128 n = (jscan_u128)mant << sh;
	jscan_u128 q = n / d;
	bool sticky = n - q * d != 0;
	int extra = jscan_bits(q) - 53;
	jscan_u128 low = q & (((jscan_u128)1 << extra) - 1), half = (jscan_u128)1 << (extra - 1);
	uint64_t m = (uint64_t)(q >> extra);
	if (low > half || (low == half && (sticky || (m & 1))))
		m++;
	*out = ldexp((double)m, extra - sh);
	return 0;
#else
	(void)mant, (void)k, (void)out;
	return -ENOTSUP;
#endif
}

static int jscan_number_any(struct jscan *s, struct jscan_val *v);

/* Whether c ends a number's integer part: no digit, fraction or exponent follows. */
static inline bool jscan_int_end(char c)
{
	return (unsigned)(c - '0') >= 10 && c != '.' && c != 'e' && c != 'E';
}

/*
 * A number: most are integers of up to 19 digits and no sign (an index, a count, an instant in
 * ns), taken here; any other token by jscan_number_any.
 */
static inline int jscan_number(struct jscan *s, struct jscan_val *v)
{
	const char *p = s->p, *q = p, *e = s->e;
	uint64_t m = 0;

	if (q < e && *q == '0') {
		q++;
	} else {
		while (q < e && (unsigned)(*q - '0') < 10 && q - p < 19)
			m = m * 10 + (uint64_t)(*q++ - '0');
	}
	if (q == p || (q < e && !jscan_int_end(*q)) || m > (uint64_t)INT64_MAX)
		return jscan_number_any(s, v);
	s->p = q;
	if (v) {
		v->type = JT_INT;
		v->i = (int64_t)m;
	}
	return 0;
}

/*
 * A number as JSON writes it, its value as Python's json reads it: an integer token (no
 * fraction, no exponent) that an int64 holds as JT_INT, a float token as JT_FLOAT when finite
 * (correctly rounded: exactly when the digits and the power of ten are doubles or
 * jscan_decimal takes them, else strtod), anything else JT_OTHER (the reduction declines it
 * where it needs the value). v NULL: the token is only checked.
 */
static int jscan_number_any(struct jscan *s, struct jscan_val *v)
{
	const char *p = s->p, *start = s->p;
	bool neg = false, is_float = false;
	uint64_t mant = 0;
	int digits = 0, frac = 0, exp10 = 0;

	if (*p == '-') {
		neg = true;
		p++;
	}
	if (p >= s->e || *p < '0' || *p > '9')
		return -EINVAL;
	if (*p == '0') {
		p++;
	} else {
		while (p < s->e && (unsigned)(*p - '0') < 10) {
			mant = mant * 10 + (uint64_t)(*p - '0'); /* read only while digits <= 19 */
			digits++;
			p++;
		}
	}
	if (p < s->e && *p == '.') {
		is_float = true;
		p++;
		if (p >= s->e || *p < '0' || *p > '9')
			return -EINVAL;
		while (p < s->e && *p >= '0' && *p <= '9') {
			if (mant || *p != '0') {
				mant = mant * 10 + (uint64_t)(*p - '0');
				digits++;
			}
			frac++;
			p++;
		}
	}
	if (p < s->e && (*p == 'e' || *p == 'E')) {
		bool eneg = false;
		is_float = true;
		p++;
		if (p < s->e && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		if (p >= s->e || *p < '0' || *p > '9')
			return -EINVAL;
		while (p < s->e && *p >= '0' && *p <= '9') {
			if (exp10 < 100000)
				exp10 = exp10 * 10 + (*p - '0');
			p++;
		}
		if (eneg)
			exp10 = -exp10;
	}
	s->p = p;
	if (!v)
		return 0;
	v->type = JT_OTHER;
	if (!is_float) {
		if (digits <= 19 && mant <= (uint64_t)INT64_MAX) {
			v->type = JT_INT;
			v->i = neg ? -(int64_t)mant : (int64_t)mant;
		}
		return 0;
	}
	int e10 = exp10 - frac;
	double d;
	if (digits <= 15 && e10 >= -22 && e10 <= 22) {
		d = (double)mant;
		d = e10 < 0 ? d / jscan_pow10[-e10] : d * jscan_pow10[e10];
	} else if (digits <= 19 && e10 <= 0 && jscan_decimal(mant, -e10, &d) == 0) {
		/* an instant since the epoch to 1e-7 s (release_at): 17 digits */
	} else {
		char buf[64];
		size_t n = (size_t)(p - start);
		if (n >= sizeof(buf))
			return 0;
		memcpy(buf, start, n);
		buf[n] = '\0';
		d = strtod(buf, NULL);
		neg = false; /* strtod read the sign */
	}
	if (!isfinite(d))
		return 0;
	v->type = JT_FLOAT;
	v->d = neg ? -d : d;
	return 0;
}

static int jscan_literal(struct jscan *s, const char *word, enum jscan_type type,
			 struct jscan_val *v)
{
	size_t n = strlen(word);
	if ((size_t)(s->e - s->p) < n || memcmp(s->p, word, n) != 0)
		return -EINVAL;
	s->p += n;
	if (v)
		v->type = type;
	return 0;
}

static int jscan_value(struct jscan *s, enum jscan_ctx ctx, struct jscan_val *v);

/* The keys of an object, compared as they come (their text is their value). */
struct jscan_keys {
	const char *k[JSCAN_MAX_KEYS];
	size_t len[JSCAN_MAX_KEYS];
	int n;
	uint64_t hashes[4]; /* a bit a key's hash: a key whose bit is clear is new, unsearched */
};

static int jscan_new_key(struct jscan_keys *ks, const char *k, size_t len)
{
	unsigned h =
	    len ? ((unsigned)len * 31u + (unsigned char)k[0] * 7u + (unsigned char)k[len - 1]) &
		      255u
		: 0u;
	uint64_t bit = UINT64_C(1) << (h & 63u);

	if (ks->hashes[h >> 6] & bit) {
		for (int i = 0; i < ks->n; i++)
			if (ks->len[i] == len && memcmp(ks->k[i], k, len) == 0)
				return -EINVAL;
	}
	ks->hashes[h >> 6] |= bit;
	if (ks->n == JSCAN_MAX_KEYS)
		return -EINVAL;
	ks->k[ks->n] = k;
	ks->len[ks->n++] = len;
	return 0;
}

/* Expect c (after white space); s->p after it. */
static int jscan_expect(struct jscan *s, char c)
{
	jscan_ws(s);
	if (s->p >= s->e || *s->p != c)
		return -EINVAL;
	s->p++;
	return 0;
}

/*
 * Over "{" ... "}" or "[" ... "]" at s->p: each member through one(s, i, key, keylen, arg)
 * (keyed: an object's, with its key); *count: how many there were.
 */
typedef int (*jscan_member_fn)(struct jscan *s, size_t i, const char *key, size_t keylen,
			       void *arg);

static int jscan_members(struct jscan *s, bool keyed, jscan_member_fn one, void *arg, size_t *count)
{
	char close = keyed ? '}' : ']';
	struct jscan_keys ks;
	size_t i = 0;
	int rc;

	ks.n = 0;
	memset(ks.hashes, 0, sizeof(ks.hashes));
	if (++s->depth > JSCAN_MAX_DEPTH)
		return -EINVAL;
	s->p++;
	jscan_ws(s);
	if (s->p < s->e && *s->p == close) {
		s->p++;
		goto out;
	}
	for (;; i++) {
		const char *key = NULL;
		size_t keylen = 0;
		jscan_ws(s);
		if (keyed) {
			if (s->p >= s->e || *s->p != '"')
				return -EINVAL;
			rc = jscan_string(s, &key, &keylen);
			if (rc == 0)
				rc = jscan_new_key(&ks, key, keylen);
			if (rc == 0)
				rc = jscan_expect(s, ':');
			if (rc)
				return rc;
			jscan_ws(s);
		}
		rc = one(s, i, key, keylen, arg);
		if (rc)
			return rc;
		jscan_ws(s);
		if (s->p < s->e && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->e && *s->p == close) {
			s->p++;
			i++;
			break;
		}
		return -EINVAL;
	}
out:
	s->depth--;
	if (count)
		*count = i;
	return 0;
}

/* A member of a container outside the taken paths, or inside a taken array. */
static int jscan_generic_member(struct jscan *s, size_t i, const char *key, size_t keylen,
				void *arg)
{
	(void)i, (void)key, (void)keylen, (void)arg;
	return jscan_value(s, CTX_ANY, NULL);
}

/* The array at s->p replaced in the text by the number of the block that follows. */
static int jscan_cut(struct jscan *s)
{
	char num[16];
	int n = 0;
	uint32_t k = s->nblocks;
	int rc;

	if (s->p >= s->e || *s->p != '[')
		return -EINVAL;
	rc = jscan_buf_put(&s->text, s->copied, (size_t)(s->p - s->copied));
	if (rc)
		return rc;
	do {
		num[n++] = (char)('0' + k % 10);
		k /= 10;
	} while (k);
	while (n)
		if ((rc = jscan_put_u8(&s->text, (unsigned)num[--n])) != 0)
			return rc;
	s->nblocks++;
	return 0;
}

static int jscan_plan_entry(struct jscan *s, size_t i, const char *key, size_t keylen, void *arg);

/* The thread plan: its length is all the reader uses ('P', u32 length). */
static int jscan_plan(struct jscan *s)
{
	size_t n;
	int rc = jscan_cut(s);
	if (rc == 0)
		rc = jscan_members(s, false, jscan_plan_entry, NULL, &n);
	if (rc == 0)
		rc = jscan_put_u8(&s->blocks, 'P');
	if (rc == 0)
		rc = jscan_put_u32(&s->blocks, n);
	s->copied = s->p;
	return rc;
}

/* An [index, count] kept: 0 or -ENOMEM. */
static int jscan_pair_keep(struct jscan *s, int64_t index, int64_t count)
{
	if (s->cappairs - s->npairs < 2) {
		size_t cap = s->cappairs ? s->cappairs * 2 : 1024;
		int64_t *p = realloc(s->pairs, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->pairs = p;
		s->cappairs = cap;
	}
	s->pairs[s->npairs++] = index;
	s->pairs[s->npairs++] = count;
	return 0;
}

/* One [index, count] of a histogram: two integers. */
static int jscan_pair(struct jscan *s, size_t i, const char *key, size_t keylen, void *arg)
{
	struct jscan_val a, b;
	(void)i, (void)key, (void)keylen, (void)arg;
	if (s->p >= s->e || *s->p != '[' || ++s->depth > JSCAN_MAX_DEPTH)
		return -EINVAL;
	s->p++;
	jscan_ws(s);
	if (s->p >= s->e || jscan_number(s, &a) != 0 || a.type != JT_INT || jscan_expect(s, ',') ||
	    (jscan_ws(s), s->p >= s->e) || jscan_number(s, &b) != 0 || b.type != JT_INT ||
	    jscan_expect(s, ']'))
		return -EINVAL;
	s->depth--;
	return jscan_pair_keep(s, a.i, b.i);
}

/*
 * The buckets at s->p written as the binary writes them, without white space
 * ([[index,count],...], at least one): read in one loop, true; false and s->p back at the "["
 * when they are written otherwise (jscan_members then reads them).
 */
static bool jscan_pairs_quick(struct jscan *s, size_t *count)
{
	const char *start = s->p;
	struct jscan_val a, b;

	if (s->depth + 2 > JSCAN_MAX_DEPTH)
		return false;
	s->p++;
	for (;;) {
		if (s->e - s->p < 5 || s->p[0] != '[')
			break;
		s->p++;
		if (jscan_number(s, &a) != 0 || a.type != JT_INT || s->p >= s->e || *s->p != ',')
			break;
		s->p++;
		if (s->p >= s->e || jscan_number(s, &b) != 0 || b.type != JT_INT || s->p >= s->e ||
		    *s->p != ']')
			break;
		s->p++;
		if (jscan_pair_keep(s, a.i, b.i) != 0)
			break;
		if (s->p < s->e && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->e && *s->p == ']') {
			s->p++;
			*count = s->npairs / 2;
			return true;
		}
		break;
	}
	s->p = start;
	s->npairs = 0;
	return false;
}

/*
 * A histogram's buckets ('H', u32 n, the n indexes, the n counts, as int64), then what
 * summaries.py's _hist_fast checks of them, so that it makes no Python number of each: the
 * least and the greatest index and the least count (i64, 0 without buckets), u8 1 and the sum
 * of the counts (u64) when none is negative and the sum fits in 64 bits, else u8 0 and 0.
 */
static int jscan_buckets(struct jscan *s)
{
	size_t n;
	int64_t lo_i = 0, hi_i = 0, lo_c = 0;
	uint64_t sum = 0;
	bool fits = true;
	int rc = jscan_cut(s);
	s->npairs = 0;
	if (rc == 0 && !jscan_pairs_quick(s, &n))
		rc = jscan_members(s, false, jscan_pair, NULL, &n);
	if (rc == 0)
		rc = jscan_put_u8(&s->blocks, 'H');
	if (rc == 0)
		rc = jscan_put_u32(&s->blocks, n);
	for (size_t k = 0; rc == 0 && k < n; k++) {
		int64_t i = s->pairs[2 * k], c = s->pairs[2 * k + 1];
		if (k == 0 || i < lo_i)
			lo_i = i;
		if (k == 0 || i > hi_i)
			hi_i = i;
		if (k == 0 || c < lo_c)
			lo_c = c;
		fits = fits && c >= 0 && !__builtin_add_overflow(sum, (uint64_t)c, &sum);
		rc = jscan_put_i64(&s->blocks, i);
	}
	for (size_t k = 0; rc == 0 && k < n; k++)
		rc = jscan_put_i64(&s->blocks, s->pairs[2 * k + 1]);
	if (rc == 0)
		rc = jscan_put_i64(&s->blocks, lo_i);
	if (rc == 0)
		rc = jscan_put_i64(&s->blocks, hi_i);
	if (rc == 0)
		rc = jscan_put_i64(&s->blocks, lo_c);
	if (!fits)
		sum = 0;
	if (rc == 0)
		rc = jscan_put_u8(&s->blocks, fits);
	if (rc == 0)
		rc = jscan_buf_put(&s->blocks, &sum, sizeof(sum));
	s->copied = s->p;
	return rc;
}

/* A member of one thread's object: the fields the reader takes kept. */
static int jscan_thread_member(struct jscan *s, size_t i, const char *key, size_t keylen, void *arg)
{
	struct jscan_thread *t = arg;
	(void)i;
	for (int f = 0; f < 8; f++)
		if (jscan_thread_keys[f].len == keylen && key[0] == jscan_thread_keys[f].name[0] &&
		    memcmp(jscan_thread_keys[f].name, key, keylen) == 0)
			return jscan_value(s, CTX_ANY, &t->f[f]);
	return jscan_value(s, CTX_ANY, NULL);
}

/*
 * An object's members as the binary writes them (driver/summary_json.c): in its order, each key
 * as "key": and the optional ones present or not. field: where jscan_as_written keeps the value
 * (in jscan_thread.f), or -1: not kept.
 */
struct jscan_written {
	const char *text;
	size_t len;
	int field;
	bool optional;
};

#define JSCAN_AS_WRITTEN(word, field, optional)                                                    \
	{                                                                                          \
		"\"" word "\":", sizeof(word) + 2, field, optional                                 \
	}
/* A part's per_thread entry (summary_json_per_thread; the two timed-pass keys of some parts). */
static const struct jscan_written jscan_thread_written[] = {
    JSCAN_AS_WRITTEN("index", TF_INDEX, false),
    JSCAN_AS_WRITTEN("cpu", TF_CPU, false),
    JSCAN_AS_WRITTEN("core", -1, false),
    JSCAN_AS_WRITTEN("release_at", TF_REL, false),
    JSCAN_AS_WRITTEN("release_at_ns", TF_RELNS, false),
    JSCAN_AS_WRITTEN("first_io_at_ns", -1, false),
    JSCAN_AS_WRITTEN("late_by_s", -1, false),
    JSCAN_AS_WRITTEN("first_pass_s", -1, true),
    JSCAN_AS_WRITTEN("rest_pass_median_s", -1, true),
    JSCAN_AS_WRITTEN("time_s", TF_TIME, false),
    JSCAN_AS_WRITTEN("bytes", TF_BYTES, false),
    JSCAN_AS_WRITTEN("ops", TF_OPS, false),
    JSCAN_AS_WRITTEN("deviation", -1, false),
    JSCAN_AS_WRITTEN("error", TF_ERROR, false),
    JSCAN_AS_WRITTEN("reason", -1, false),
};
/* An entry of the thread plan (summary_json_threads; "smt" where the plan uses SMT). */
static const struct jscan_written jscan_plan_written[] = {
    JSCAN_AS_WRITTEN("index", -1, false), JSCAN_AS_WRITTEN("cpu", -1, false),
    JSCAN_AS_WRITTEN("core", -1, false),  JSCAN_AS_WRITTEN("package", -1, false),
    JSCAN_AS_WRITTEN("smt", -1, true),
};
#define JSCAN_COUNT(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(JSCAN_COUNT(jscan_thread_written) <= JSCAN_SEP_KEYS &&
		   JSCAN_COUNT(jscan_plan_written) <= JSCAN_SEP_KEYS,
	       "a separator for each key");

/* Whether the n bytes at p (before e) are those of t, compared eight at a time. */
static inline bool jscan_same(const char *p, const char *e, const char *t, size_t n)
{
	if ((size_t)(e - p) < n)
		return false;
	if (n < 8)
		return memcmp(p, t, n) == 0;
	for (size_t i = 0; i + 8 < n; i += 8)
		if (jscan_load(p + i) != jscan_load(t + i))
			return false;
	return jscan_load(p + n - 8) == jscan_load(t + n - 8);
}

/*
 * Reads the value at s->p into vals[field] (field >= 0, vals not NULL), or only checks it.
 */
static inline int jscan_written_value(struct jscan *s, const struct jscan_written *w,
				      struct jscan_val *vals)
{
	return jscan_value(s, CTX_ANY, vals && w->field >= 0 ? &vals[w->field] : NULL);
}

/*
 * The members of the object after its "{" at s->p, written with the white space of the last
 * one (learned here from its first member: the white space after "{", which follows each ",",
 * and after ":"), each after the first one comparison of its "," space "key": space: true and
 * s->p after the last value; false (s->p anywhere) when they are not.
 */
static bool jscan_written_quick(struct jscan *s, const struct jscan_written *tab, size_t n,
				struct jscan_seps *seps, struct jscan_val *vals)
{
	const char *w = s->p, *sp;
	size_t wlen, splen;

	jscan_ws(s);
	wlen = (size_t)(s->p - w);
	if (wlen > JSCAN_SEP_SPACE || !jscan_same(s->p, s->e, tab[0].text, tab[0].len))
		return false;
	s->p += tab[0].len;
	sp = s->p;
	jscan_ws(s);
	splen = (size_t)(s->p - sp);
	if (splen > JSCAN_SEP_SPACE)
		return false;
	if (seps->table != tab || seps->wlen != wlen || seps->splen != splen ||
	    memcmp(seps->w, w, wlen) != 0 || memcmp(seps->sp, sp, splen) != 0) {
		seps->table = tab;
		seps->wlen = wlen;
		seps->splen = splen;
		memcpy(seps->w, w, wlen);
		memcpy(seps->sp, sp, splen);
		for (size_t k = 1; k < n; k++) {
			char *t = seps->sep[k];
			t[0] = ',';
			memcpy(t + 1, w, wlen);
			memcpy(t + 1 + wlen, tab[k].text, tab[k].len);
			memcpy(t + 1 + wlen + tab[k].len, sp, splen);
			seps->len[k] = 1 + wlen + tab[k].len + splen;
		}
	}
	if (jscan_written_value(s, &tab[0], vals) != 0)
		return false;
	for (size_t k = 1; k < n; k++) {
		if (!jscan_same(s->p, s->e, seps->sep[k], seps->len[k])) {
			if (tab[k].optional)
				continue;
			return false;
		}
		s->p += seps->len[k];
		if (jscan_written_value(s, &tab[k], vals) != 0)
			return false;
	}
	return true;
}

/*
 * The object at s->p read as the binary writes it, its keys (tab, n of them) matched in their
 * order instead of looked up and compared (distinct, they repeat none): true; false and s as it
 * was when it is written otherwise (jscan_members then reads it, in any order). vals: where the
 * kept values go (zeroed when false), or NULL.
 */
static bool jscan_as_written(struct jscan *s, const struct jscan_written *tab, size_t n,
			     struct jscan_seps *seps, struct jscan_val *vals, size_t nvals)
{
	const char *start = s->p;
	int depth = s->depth;

	if (++s->depth > JSCAN_MAX_DEPTH)
		goto other;
	s->p++;
	if (jscan_written_quick(s, tab, n, seps, vals))
		goto end;
	/* white space of its own between the members: each one looked at */
	s->p = start + 1;
	if (vals)
		memset(vals, 0, nvals * sizeof(*vals));
	for (size_t k = 0; k < n; k++) {
		const char *before = s->p;
		jscan_ws(s);
		if (k > 0) {
			if (s->p >= s->e || *s->p != ',')
				goto other;
			s->p++;
			jscan_ws(s);
		}
		if ((size_t)(s->e - s->p) < tab[k].len ||
		    memcmp(s->p, tab[k].text, tab[k].len) != 0) {
			if (!tab[k].optional)
				goto other;
			s->p = before;
			continue;
		}
		s->p += tab[k].len;
		jscan_ws(s);
		if (jscan_written_value(s, &tab[k], vals) != 0)
			goto other;
	}
end:
	jscan_ws(s);
	if (s->p < s->e && *s->p == '}') {
		s->p++;
		s->depth = depth;
		return true;
	}
other:
	s->p = start;
	s->depth = depth;
	if (vals)
		memset(vals, 0, nvals * sizeof(*vals));
	return false;
}

/* An entry of the thread plan: only checked. */
static int jscan_plan_entry(struct jscan *s, size_t i, const char *key, size_t keylen, void *arg)
{
	(void)i, (void)key, (void)keylen, (void)arg;
	if (s->p < s->e && *s->p == '{' &&
	    jscan_as_written(s, jscan_plan_written, JSCAN_COUNT(jscan_plan_written), &s->plan_seps,
			     NULL, 0))
		return 0;
	return jscan_value(s, CTX_ANY, NULL);
}

static int jscan_thread(struct jscan *s, size_t i, const char *key, size_t keylen, void *arg)
{
	struct jscan_thread *t;
	(void)i, (void)key, (void)keylen, (void)arg;
	if (s->p >= s->e || *s->p != '{')
		return -EINVAL;
	if (s->nth == s->capth) {
		size_t cap = s->capth ? s->capth * 2 : 256;
		struct jscan_thread *more = realloc(s->th, cap * sizeof(*more));
		if (!more)
			return -ENOMEM;
		s->th = more;
		s->capth = cap;
	}
	t = &s->th[s->nth++];
	memset(t, 0, sizeof(*t));
	if (jscan_as_written(s, jscan_thread_written, JSCAN_COUNT(jscan_thread_written),
			     &s->thread_seps, t->f, JSCAN_COUNT(t->f)))
		return 0;
	return jscan_members(s, true, jscan_thread_member, t, NULL);
}

static bool jscan_number_ok(const struct jscan_val *v, double lo, double hi)
{
	if (v->type == JT_INT)
		return v->i > -JSCAN_EXACT_INT && v->i < JSCAN_EXACT_INT && (double)v->i >= lo &&
		       (double)v->i <= hi;
	return v->type == JT_FLOAT && v->d >= lo && v->d <= hi;
}

static double jscan_double(const struct jscan_val *v)
{
	return v->type == JT_INT ? (double)v->i : v->d;
}

/* Python's tuple order of (time, index, cpu), greater first. */
static bool jscan_above(const struct jscan_thread *a, const struct jscan_thread *b)
{
	double ta = jscan_double(&a->f[TF_TIME]), tb = jscan_double(&b->f[TF_TIME]);
	if (ta != tb)
		return ta > tb;
	if (a->f[TF_INDEX].i != b->f[TF_INDEX].i)
		return a->f[TF_INDEX].i > b->f[TF_INDEX].i;
	return a->f[TF_CPU].i > b->f[TF_CPU].i;
}

static int jscan_put_typed(struct jscan_buf *b, const struct jscan_val *v)
{
	int rc = jscan_put_f64(b, jscan_double(v));
	return rc ? rc : jscan_put_u8(b, v->type == JT_INT);
}

/*
 * What selfcheck.py's _adds_up computes of the threads' columns, when every release_at_ns, ops
 * and bytes is an integer: the first release (i64 ns); the greatest release offset + time,
 * each (release - first) / 1e9 + time in doubles as Python evaluates it (f64), and the index of
 * the first thread that has it (i64); for ops, then bytes: u8 1 and the value when every
 * thread has the same, else u8 0 and 0.
 */
static int jscan_sums(struct jscan *s, size_t n)
{
	const struct jscan_thread *t = s->th;
	int64_t first = t[0].f[TF_RELNS].i;
	size_t at = 0;
	int rc;

	for (size_t i = 1; i < n; i++)
		if (t[i].f[TF_RELNS].i < first)
			first = t[i].f[TF_RELNS].i;
	double need = 0;
	/* (a first release at or before 0 ends the check there: no offset is taken) */
	for (size_t i = 0; first > 0 && i < n; i++) {
		double end =
		    (double)(t[i].f[TF_RELNS].i - first) / 1e9 + jscan_double(&t[i].f[TF_TIME]);
		if (i == 0 || end > need) {
			need = end;
			at = i;
		}
	}
	rc = jscan_put_i64(&s->blocks, first);
	if (rc == 0)
		rc = jscan_put_f64(&s->blocks, need);
	if (rc == 0)
		rc = jscan_put_i64(&s->blocks, t[at].f[TF_INDEX].i);
	for (int f = TF_OPS; rc == 0 && f <= TF_BYTES; f++) {
		bool same = true;
		for (size_t i = 1; i < n && same; i++)
			same = t[i].f[f].i == t[0].f[f].i;
		rc = jscan_put_u8(&s->blocks, same);
		if (rc == 0)
			rc = jscan_put_i64(&s->blocks, same ? t[0].f[f].i : 0);
	}
	return rc;
}

/*
 * The n doubles at at (unaligned) sorted in place, equal ones in their order (-0.0 before or
 * after 0.0 as they came): a merge sort. The collector sorts the threads' times of a whole
 * chunk of summaries; runs already sorted are merged rather than sorted again. 0 or -ENOMEM.
 */
static int jscan_sort_times(struct jscan *s, unsigned char *at, size_t n)
{
	if (n < 2)
		return 0;
	if (s->captimes < n) {
		double *more = realloc(s->times, 2 * n * sizeof(*more));
		if (!more)
			return -ENOMEM;
		s->times = more;
		s->captimes = n;
	}
	double *v = s->times, *tmp = s->times + n;
	memcpy(v, at, n * sizeof(*v));
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				tmp[k++] = v[j] < v[i] ? v[j++] : v[i++];
			while (i < mid)
				tmp[k++] = v[i++];
			while (j < hi)
				tmp[k++] = v[j++];
		}
		double *x = v;
		v = tmp;
		tmp = x;
	}
	memcpy(at, v, n * sizeof(*v));
	return 0;
}

/*
 * A part's per_thread: summaries.py's _threads_fast on it, declined where that would not take
 * its fast path or where a thread carries an error. 'T', u32 threads, u32 ran; the times of the
 * threads that ran (f64), sorted, equal ones (-0.0 and 0.0) in their order; u8 1 and the first
 * least and the first greatest release (f64, u8 is an integer) when any ran, else u8 0; u32 kept
 * and that many slowest threads (f64 time, u8 is an integer, i64 index, i64 cpu), greatest first,
 * the earlier of equal ones first; u8 1 and jscan_sums' figures when there are threads and every
 * release_at_ns, ops and bytes is an integer, else u8 0.
 */
static int jscan_threads(struct jscan *s)
{
	struct jscan_buf *b = &s->blocks;
	size_t n, ran = 0, top[16], ntop = 0, rmin = 0, rmax = 0;
	bool cols = true;
	int rc = jscan_cut(s);

	s->nth = 0;
	if (rc == 0)
		rc = jscan_members(s, false, jscan_thread, NULL, &n);
	if (rc)
		return rc;
	s->copied = s->p;
	for (size_t i = 0; i < n; i++) {
		const struct jscan_thread *t = &s->th[i];
		if (!jscan_number_ok(&t->f[TF_TIME], 0, JSCAN_MAX_SECONDS) ||
		    !jscan_number_ok(&t->f[TF_REL], 0, JSCAN_MAX_EPOCH) ||
		    t->f[TF_INDEX].type != JT_INT || t->f[TF_INDEX].i < 0 ||
		    t->f[TF_CPU].type != JT_INT || t->f[TF_CPU].i < 0 ||
		    t->f[TF_ERROR].type != JT_NULL)
			return -EINVAL;
		for (int f = TF_RELNS; f <= TF_BYTES; f++)
			cols = cols && t->f[f].type == JT_INT;
	}
	if (s->top > sizeof(top) / sizeof(top[0]))
		return -EINVAL;
	rc = jscan_put_u8(b, 'T');
	if (rc == 0)
		rc = jscan_put_u32(b, n);
	size_t at_ran = b->len;
	if (rc == 0)
		rc = jscan_put_u32(b, 0);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct jscan_thread *t = s->th;
		if (!(jscan_double(&t[i].f[TF_REL]) > 0))
			continue;
		rc = jscan_put_f64(b, jscan_double(&t[i].f[TF_TIME]));
		if (ran == 0 || jscan_double(&t[i].f[TF_REL]) < jscan_double(&t[rmin].f[TF_REL]))
			rmin = i;
		if (ran == 0 || jscan_double(&t[i].f[TF_REL]) > jscan_double(&t[rmax].f[TF_REL]))
			rmax = i;
		ran++;
		/* after every kept one that is not below it */
		size_t at = ntop;
		while (at > 0 && jscan_above(&t[i], &t[top[at - 1]]))
			at--;
		if (at < s->top) {
			if (ntop < s->top)
				ntop++;
			memmove(&top[at + 1], &top[at], (ntop - 1 - at) * sizeof(top[0]));
			top[at] = i;
		}
	}
	if (rc)
		return rc;
	rc = jscan_sort_times(s, b->p + at_ran + 4, ran);
	if (rc)
		return rc;
	uint32_t ran32 = (uint32_t)ran;
	memcpy(b->p + at_ran, &ran32, sizeof(ran32));
	rc = jscan_put_u8(b, ran > 0);
	if (rc == 0 && ran > 0) {
		rc = jscan_put_typed(b, &s->th[rmin].f[TF_REL]);
		if (rc == 0)
			rc = jscan_put_typed(b, &s->th[rmax].f[TF_REL]);
	}
	if (rc == 0)
		rc = jscan_put_u32(b, ntop);
	for (size_t k = 0; rc == 0 && k < ntop; k++) {
		const struct jscan_thread *t = &s->th[top[k]];
		rc = jscan_put_typed(b, &t->f[TF_TIME]);
		if (rc == 0)
			rc = jscan_put_i64(b, t->f[TF_INDEX].i);
		if (rc == 0)
			rc = jscan_put_i64(b, t->f[TF_CPU].i);
	}
	if (rc == 0)
		rc = jscan_put_u8(b, cols && n > 0);
	if (rc == 0 && cols && n > 0)
		rc = jscan_sums(s, n);
	return rc;
}

/* A member of an object on a taken path: its key decides what the value is. */
static int jscan_path_member(struct jscan *s, size_t i, const char *key, size_t keylen, void *arg)
{
	enum jscan_ctx ctx = *(enum jscan_ctx *)arg;
	(void)i;
#define JSCAN_KEY(word) (keylen == sizeof(word) - 1 && memcmp(key, word, keylen) == 0)
	if (ctx == CTX_ROOT && JSCAN_KEY("threads"))
		return jscan_plan(s);
	if (ctx == CTX_ROOT && JSCAN_KEY("tests"))
		return jscan_value(s, CTX_TESTS, NULL);
	if (ctx == CTX_TEST && JSCAN_KEY("parts"))
		return jscan_value(s, CTX_PARTS, NULL);
	if (ctx == CTX_PART && JSCAN_KEY("per_thread"))
		return jscan_threads(s);
	if (ctx == CTX_PART && JSCAN_KEY("latency_hist"))
		return jscan_value(s, CTX_HIST, NULL);
	if (ctx == CTX_HIST && JSCAN_KEY("buckets"))
		return jscan_buckets(s);
#undef JSCAN_KEY
	return jscan_value(s, CTX_ANY, NULL);
}

/* An element of the tests or of a test's parts. */
static int jscan_path_element(struct jscan *s, size_t i, const char *key, size_t keylen, void *arg)
{
	enum jscan_ctx ctx = *(enum jscan_ctx *)arg == CTX_TESTS ? CTX_TEST : CTX_PART;
	(void)i, (void)key, (void)keylen;
	return jscan_value(s, ctx, NULL);
}

/*
 * The value at s->p (after white space); v: its type and value (a scalar's), or NULL.
 */
static int jscan_generic(struct jscan *s, bool keyed)
{
	return jscan_members(s, keyed, jscan_generic_member, NULL, NULL);
}

static int jscan_value(struct jscan *s, enum jscan_ctx ctx, struct jscan_val *v)
{
	if (s->p >= s->e)
		return -EINVAL;
	if (v)
		v->type = JT_OTHER;
	switch (*s->p) {
	case '{':
		if (ctx == CTX_ROOT || ctx == CTX_TEST || ctx == CTX_PART || ctx == CTX_HIST)
			return jscan_members(s, true, jscan_path_member, &ctx, NULL);
		return jscan_generic(s, true);
	case '[':
		if (ctx == CTX_TESTS || ctx == CTX_PARTS)
			return jscan_members(s, false, jscan_path_element, &ctx, NULL);
		return jscan_generic(s, false);
	case '"': {
		const char *str;
		size_t len;
		return jscan_string(s, &str, &len);
	}
	case 't':
		return jscan_literal(s, "true", JT_OTHER, v);
	case 'f':
		return jscan_literal(s, "false", JT_OTHER, v);
	case 'n':
		return jscan_literal(s, "null", JT_NULL, v);
	default:
		return jscan_number(s, v);
	}
}

int jscan_summary(const char *text, size_t len, unsigned top, struct jscan_buf *out)
{
	struct jscan s = {.p = text, .e = text + len, .copied = text, .top = top};
	size_t mark = out->len;
	int rc;

	jscan_ws(&s);
	if (s.p >= s.e || *s.p != '{') {
		rc = -EINVAL;
		goto out;
	}
	rc = jscan_value(&s, CTX_ROOT, NULL);
	jscan_ws(&s);
	if (rc == 0 && s.p != s.e)
		rc = -EINVAL;
	if (rc == 0)
		rc = jscan_buf_put(&s.text, s.copied, (size_t)(s.e - s.copied));
	if (rc == 0 && (s.text.len > UINT32_MAX || s.blocks.len > UINT32_MAX))
		rc = -EINVAL;
	if (rc == 0)
		rc = jscan_put_u8(out, 'D');
	if (rc == 0)
		rc = jscan_put_u32(out, s.text.len);
	if (rc == 0)
		rc = jscan_buf_put(out, s.text.p, s.text.len);
	if (rc == 0)
		rc = jscan_put_u32(out, s.nblocks);
	if (rc == 0)
		rc = jscan_buf_put(out, s.blocks.p, s.blocks.len);
out:
	if (rc)
		out->len = mark;
	jscan_buf_free(&s.text);
	jscan_buf_free(&s.blocks);
	free(s.th);
	free(s.pairs);
	free(s.times);
	return rc;
}
