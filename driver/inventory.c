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
#include "platform/fsinfo.h"
#include "workers/replica.h"

static const char inventory_prefix[] = "stagebench.";

/* "stagebench.<test>.<size>" with test one of the replica tests and nothing after the size. */
static bool inventory_is_replica_name(const char *name, bool *temp)
{
	const char *rest = name + sizeof(inventory_prefix) - 1;

	*temp = strstr(rest, ".tmp.") != NULL;
	for (size_t i = 0; i < plan_ntests; i++) {
		size_t n = strlen(plan_tests[i].name);
		if (!plan_tests[i].has_replica || strncmp(rest, plan_tests[i].name, n) != 0 ||
		    rest[n] != '.')
			continue;
		const char *size = rest + n + 1;
		return *temp || strchr(size, '.') == NULL;
	}
	return false;
}

static int inventory_cmp(const void *a, const void *b)
{
	const struct inventory_entry *x = a, *y = b;

	if (x->kind != y->kind)
		return (int)x->kind - (int)y->kind;
	return strcmp(x->name, y->name);
}

int inventory_scan(int dirfd, const char *dir, struct inventory_entry **out, size_t *n)
{
	struct inventory_entry *v = NULL;
	size_t count = 0, cap = 0;
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!d) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		bool temp = false;
		struct stat st;

		if (strncmp(de->d_name, inventory_prefix, sizeof(inventory_prefix) - 1) != 0)
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct inventory_entry *nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				goto out;
			}
			v = nv;
			cap = ncap;
		}
		struct inventory_entry *e = &v[count++];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		e->size = (uint64_t)st.st_size;
		e->mtime = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
		e->residency = -1.0;
		bool replica = inventory_is_replica_name(de->d_name, &temp);
		e->kind = replica ? (temp ? INV_TEMP : INV_REPLICA) : INV_FILE;
		if (e->kind == INV_REPLICA) {
			struct replica_info info;
			char path[4096];

			if (replica_probe(dirfd, de->d_name, &info) == 0) {
				e->ours = info.ours;
				e->generation = info.generation;
			}
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (fs_residency(path, &e->residency) != 0)
				e->residency = -1.0;
		} else {
			e->ours = replica_removable(dirfd, de->d_name) == 1;
		}
	}
	if (count)
		qsort(v, count, sizeof(*v), inventory_cmp);
out:
	closedir(d);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = count;
	return 0;
}

void inventory_needs(const struct plan *p, const struct options *o, int dirfd, size_t threads,
		     uint64_t *bytes, uint64_t *inodes)
{
	uint64_t b = 0, n = 0, b4 = 0, n4 = 0;

	for (size_t i = 0; i < p->ntests; i++) {
		const struct plan_test *pt = &p->tests[i];
		struct replica_info info;

		if (!pt->def->has_replica)
			continue;
		/* A run never creates test 3's spec-sized replica: it asks for `prepare 3`. */
		if (o->cmd == CMD_RUN && pt->def->needs_prepare && o->scale == SCALE_SPEC)
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

		if (strcmp(pp->def->kind, "manyfiles") != 0)
			continue;
		if (o->keep) {
			uint64_t x;
			b4 = __builtin_mul_overflow(pb, o->repeat, &x) ||
				     __builtin_add_overflow(b4, x, &b4)
				 ? UINT64_MAX
				 : b4;
			n4 = __builtin_mul_overflow(pn, o->repeat, &x) ||
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
