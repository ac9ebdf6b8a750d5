/* SPDX-License-Identifier: MIT */
/*
 * The inventory of a working directory, and what a plan needs there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/inventory.h"
#include "platform/bounded.h"
#include "platform/fsinfo.h"
#include "util/log.h"
#include "util/size.h"
#include "platform/ours.h"
#include "platform/replica_probe.h"
#include "util/names.h"

/* Whether test is one of the catalogue's that reads a replica. */
static bool inventory_replica_test(const char *test)
{
	for (size_t i = 0; i < plan_ntests; i++) {
		if (plan_tests[i].has_replica && strcmp(plan_tests[i].name, test) == 0)
			return true;
	}
	return false;
}

/* A stream of the entries of dirfd, from the start, that leaves dirfd open. 0 or -errno. */
static int inventory_opendir(int dirfd, DIR **d)
{
	int fd = dup(dirfd);
	int rc;

	*d = fd >= 0 ? fdopendir(fd) : NULL;
	if (*d) {
		rewinddir(*d);
		return 0;
	}
	rc = -errno;
	if (fd >= 0)
		close(fd);
	return rc;
}

static int inventory_cmp(const void *a, const void *b)
{
	const struct inventory_entry *x = a, *y = b;

	return strcmp(x->name, y->name);
}

const char *inventory_kind_name(enum inventory_kind kind)
{
	static const char *const names[] = {[INV_REPLICA] = "replica",
					    [INV_TEMP] = "temporary",
					    [INV_FILE] = "file",
					    [INV_CHECK] = "check",
					    [INV_OTHER] = "other"};

	return kind < INV_NKINDS ? names[kind] : "?";
}

/*
 * The kind of a directory entry, by its name (util/names.h): a replica's name of one of the
 * catalogue's replica tests (whatever its size says), check's files, the temporaries and
 * files of the grammar, any other name with ".tmp." in it as a temporary.
 */
static enum inventory_kind inventory_kind_of(const char *name)
{
	struct names_fields f;

	switch (names_parse(name, &f)) {
	case NAMES_REPLICA:
		if (inventory_replica_test(f.head))
			return INV_REPLICA;
		break;
	case NAMES_PROBE:
	case NAMES_PROBE_TEMP:
	case NAMES_PROBE_FILE:
	case NAMES_WRITE_PROBE:
		return INV_CHECK;
	case NAMES_TEMP:
		return INV_TEMP;
	case NAMES_FILE:
		return INV_FILE;
	default:
		break;
	}
	return f.tmp ? INV_TEMP : INV_OTHER;
}

/* Keep e among the first INVENTORY_EXAMPLES names of the sum, in byte order. */
static void inventory_sum_add(struct inventory_sum *sum, const struct inventory_entry *e)
{
	size_t i = sum->nexamples;

	sum->count++;
	sum->bytes =
	    __builtin_add_overflow(sum->bytes, e->size, &sum->bytes) ? UINT64_MAX : sum->bytes;
	if (!sum->oldest || e->mtime < sum->oldest)
		sum->oldest = e->mtime;
	if (i == INVENTORY_EXAMPLES) {
		if (strcmp(e->name, sum->examples[i - 1].name) >= 0)
			return;
		i--;
	} else {
		sum->nexamples++;
	}
	for (; i > 0 && strcmp(e->name, sum->examples[i - 1].name) < 0; i--)
		sum->examples[i] = sum->examples[i - 1];
	sum->examples[i] = *e;
}

/* A replica: listed while there is room, else counted. */
static void inventory_add_replica(struct inventory *inv, const struct inventory_entry *e)
{
	if (inv->nreplicas == INVENTORY_MAX_LISTED)
		inv->replicas_not_listed++;
	else
		inv->replicas[inv->nreplicas++] = *e;
}

/* A listed replica's header and page-cache residency, read without following a link. */
static void inventory_replica_details(int dirfd, struct inventory_entry *r)
{
	struct replica_info info;
	struct fs_residency res;

	if (replica_probe(dirfd, r->name, &info) == 0) {
		r->ours = info.ours;
		r->generation = info.generation;
	}
	int fd = openat(dirfd, r->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fs_residency_fd(fd, &res) == 0 && res.known)
		r->residency = res.fraction;
	if (fd >= 0)
		close(fd);
}

int inventory_take(int dirfd, bool details, struct inventory *inv)
{
	struct dirent *de;
	DIR *d;
	int rc = inventory_opendir(dirfd, &d);

	memset(inv, 0, sizeof(*inv));
	if (rc)
		return rc;
	while ((de = readdir(d)) != NULL) {
		struct inventory_entry e;
		struct stat st;

		if (strncmp(de->d_name, NAMES_PREFIX, strlen(NAMES_PREFIX)) != 0 ||
		    strlen(de->d_name) >= sizeof(e.name))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		memset(&e, 0, sizeof(e));
		snprintf(e.name, sizeof(e.name), "%s", de->d_name);
		e.size = (uint64_t)st.st_size;
		e.mtime = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
		e.residency = -1.0;
		e.kind = inventory_kind_of(de->d_name);
		if (e.kind == INV_REPLICA) {
			inventory_add_replica(inv, &e);
			continue;
		}
		inventory_sum_add(&inv->left[e.kind], &e);
		inventory_sum_add(&inv->leftovers, &e);
	}
	closedir(d);
	qsort(inv->replicas, inv->nreplicas, sizeof(inv->replicas[0]), inventory_cmp);
	if (!details)
		return 0;
	for (size_t i = 0; i < inv->nreplicas; i++)
		inventory_replica_details(dirfd, &inv->replicas[i]);
	/* Only the examples are read: what `clean` would do with them. */
	for (int k = INV_TEMP; k < INV_NKINDS; k++) {
		for (size_t i = 0; i < inv->left[k].nexamples; i++) {
			struct inventory_entry *e = &inv->left[k].examples[i];
			e->ours = ours_removable(dirfd, e->name) == 1;
		}
	}
	return 0;
}

void inventory_leftovers_line(const struct inventory *inv, const char *dir, double now, char *buf,
			      size_t len)
{
	const struct inventory_sum *all = &inv->leftovers;
	char a[32], kinds[128] = "";

	buf[0] = '\0';
	if (!all->count)
		return;
	for (int k = INV_TEMP; k < INV_NKINDS; k++) {
		size_t n = strlen(kinds);
		if (inv->left[k].count)
			snprintf(kinds + n, sizeof(kinds) - n, "%s%llu %s", n ? ", " : "",
				 (unsigned long long)inv->left[k].count,
				 inventory_kind_name((enum inventory_kind)k));
	}
	snprintf(buf, len,
		 "%llu leftover file%s in '%s' (kept by --keep or left by interrupted runs; %s, "
		 "oldest %.0f s ago; %s): 'stagebench clean all' removes stagebench's",
		 (unsigned long long)all->count, all->count == 1 ? "" : "s", dir,
		 size_format(all->bytes, a, sizeof(a)), now - all->oldest, kinds);
}

struct inventory_child_ctx {
	const struct inventory_dir_hooks *dir;
	struct node_result *res;
	struct inventory_report *rep;
};

/* The child's work: the report once the directory is open, then again with its inventory. */
static int inventory_child_work(struct inventory_child_ctx *c, int fd)
{
	struct inventory_report *rep = c->rep;
	int dirfd = -1;

	rep->out = c->dir->open(c->dir->ctx, &dirfd, rep->why, sizeof(rep->why));
	rep->answered = true;
	snprintf(rep->dir, sizeof(rep->dir), "%s", c->res->dir);
	rep->fs_ok = c->res->fs_ok;
	rep->fs = c->res->fs;
	if (bounded_send(fd, rep, sizeof(*rep)) || rep->out != OUTCOME_OK)
		return 1;
	rep->listed = inventory_take(dirfd, true, &rep->inv) == 0;
	return bounded_send(fd, rep, sizeof(*rep)) ? 1 : 0;
}

static int inventory_child(void *arg, int fd)
{
	struct inventory_child_ctx *c = arg;
	int rc = inventory_child_work(c, fd);

	c->dir->release(c->dir->ctx);
	return rc;
}

enum outcome inventory_report_take(const struct inventory_dir_hooks *dir, struct node_result *res,
				   int timeout_s, volatile sig_atomic_t *stop,
				   struct inventory_report *rep)
{
	static struct inventory_report got;
	struct inventory_child_ctx c = {dir, res, &got};
	struct bounded b;
	int rc, n = 0;

	memset(rep, 0, sizeof(*rep));
	rc = bounded_start(&b, timeout_s, inventory_child, &c);
	/* Read into got: a record cut by the deadline must not spoil the one before. */
	while (rc == 0 && (rc = bounded_read(&b, &got, sizeof(got), stop)) == 1) {
		*rep = got;
		n++;
		rc = 0;
	}
	if (rc == -EINTR) {
		bounded_signal(&b, *stop, 1.0);
		bounded_end(&b);
		return *stop == SIGTERM ? OUTCOME_INTERRUPTED_TERM : OUTCOME_INTERRUPTED_INT;
	}
	bounded_end(&b);
	if (n == 2 || (n == 1 && rep->out != OUTCOME_OK))
		return rep->out;
	snprintf(rep->why, sizeof(rep->why), "%s after %d s (while %s %s)",
		 rc == -ETIMEDOUT ? "not responding" : "no answer", timeout_s,
		 n ? "listing" : "opening", n ? rep->dir : res->dir);
	rep->answered = false;
	rep->listed = false;
	return OUTCOME_OK;
}

void inventory_needs(const struct plan *p, int dirfd, size_t threads, uint64_t *bytes,
		     uint64_t *inodes)
{
	uint64_t b = 0, n = 0, b4 = 0, n4 = 0;

	for (size_t i = 0; i < p->ntests; i++) {
		const struct plan_test *pt = &p->tests[i];
		struct replica_info info;

		if (!pt->def->has_replica)
			continue;
		if (!pt->may_create)
			continue;
		if (dirfd < 0 || replica_probe(dirfd, pt->replica, &info) != 0) {
			b = __builtin_add_overflow(b, pt->file, &b) ? UINT64_MAX : b;
			n++;
		}
	}
	for (size_t i = 0; i < p->nparts; i++) {
		const struct plan_part *pp = &p->parts[i];
		uint64_t pb, pn;

		/* Saturate: --count 1e12 --chunk 1T must read as "too much", not wrap to little. */
		if (__builtin_mul_overflow(pp->p.count, pp->p.chunk, &pb) ||
		    __builtin_mul_overflow(pb, (uint64_t)threads, &pb))
			pb = UINT64_MAX;
		if (__builtin_mul_overflow(pp->p.count, (uint64_t)threads, &pn))
			pn = UINT64_MAX;

		if (!(pp->ops->caps & BENCH_WRITES_FILES))
			continue;
		if (p->run.keep) {
			uint64_t x;
			b4 = __builtin_mul_overflow(pb, p->run.repeat, &x) ||
				     __builtin_add_overflow(b4, x, &b4)
				 ? UINT64_MAX
				 : b4;
			n4 = __builtin_mul_overflow(pn, p->run.repeat, &x) ||
				     __builtin_add_overflow(n4, x, &n4)
				 ? UINT64_MAX
				 : n4;
		} else {
			b4 = pb > b4 ? pb : b4;
			n4 = pn > n4 ? pn : n4;
		}
	}
	*bytes = __builtin_add_overflow(b, b4, bytes) ? UINT64_MAX : *bytes;
	*inodes = __builtin_add_overflow(n, n4, inodes) ? UINT64_MAX : *inodes;
}

/* Whether the plan has every test of `run all`: `clean all`. */
static bool inventory_plan_all(const struct plan *p)
{
	for (size_t i = 0; i < plan_ntests; i++) {
		bool in = !plan_tests[i].in_all;
		for (size_t k = 0; k < p->ntests && !in; k++)
			in = p->tests[k].def == &plan_tests[i];
		if (!in)
			return false;
	}
	return true;
}

/*
 * Does a directory entry belong to the tests being cleaned? By its name's head (util/names.h):
 * a replica test's name, or the name of one of the parts of another test, whatever the kind
 * that made the file; check's files with every test.
 */
static bool inventory_clean_match(const struct plan *p, const char *name)
{
	struct names_fields f;

	if (strncmp(name, NAMES_PREFIX, strlen(NAMES_PREFIX)) != 0)
		return false;
	if (inventory_kind_of(name) == INV_CHECK)
		return inventory_plan_all(p);
	names_parse(name, &f);
	for (size_t i = 0; i < p->ntests; i++) {
		const struct plan_test *pt = &p->tests[i];
		if (pt->def->has_replica) {
			if (strcmp(f.head, pt->def->name) == 0)
				return true;
			continue;
		}
		for (size_t k = 0; k < pt->nparts; k++) {
			if (strcmp(f.head, p->parts[pt->first + k].def->name) == 0)
				return true;
		}
	}
	return false;
}

enum outcome inventory_clean(const struct plan *p, int dirfd, const char *dir, bool dry_run)
{
	enum outcome out = OUTCOME_OK;
	size_t removed = 0, kept = 0;
	struct dirent *de;
	DIR *d;
	int rc = inventory_opendir(dirfd, &d);

	if (rc) {
		log_err("cannot list '%s': %s", dir, strerror(-rc));
		return OUTCOME_PRECONDITION;
	}
	while ((de = readdir(d)) != NULL) {
		if (!inventory_clean_match(p, de->d_name))
			continue;
		int ours = ours_removable(dirfd, de->d_name);
		if (ours != 1) {
			printf("left alone: %s/%s (%s)\n", dir, de->d_name,
			       ours < 0 ? strerror(-ours) : "not a stagebench file");
			kept++;
			continue;
		}
		if (dry_run) {
			printf("would remove: %s/%s\n", dir, de->d_name);
			continue;
		}
		if (unlinkat(dirfd, de->d_name, 0) != 0) {
			log_err("cannot remove '%s/%s': %s", dir, de->d_name, strerror(errno));
			out = OUTCOME_FAILED;
			continue;
		}
		printf("removed: %s/%s\n", dir, de->d_name);
		removed++;
	}
	closedir(d);
	printf("%zu file%s removed, %zu left alone\n", removed, removed == 1 ? "" : "s", kept);
	return out;
}
