/* SPDX-License-Identifier: MIT */
/*
 * The set-up steps the subcommands share: this node's name and run tag, the thread plan, --dir
 * opened and checked, the clock read, the space check before writing, and the one way out.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/cmdenv.h"
#include "driver/note.h"
#include "driver/options.h"
#include "driver/output.h"
#include "driver/views.h"
#include "platform/fsinfo.h"
#include "platform/selfexe.h"
#include "util/log.h"
#include "util/names.h"
#include "util/size.h"

/* The longest real path of --dir: BENCH_PATH_MAX leaves 128 bytes for the names in it. */
#define CMDENV_DIR_MAX (BENCH_PATH_MAX - 129)

enum outcome cmdenv_node(struct cmdenv *e, char *why, size_t whylen)
{
	struct node_result *res = &e->res;

	if (gethostname(res->host, sizeof(res->host) - 1) != 0)
		snprintf(res->host, sizeof(res->host), "localhost");
	const char *node = e->o.node ? e->o.node : res->host;
	/* --node and STAGEBENCH_NODE were checked by the option parser; the host name is not. */
	if (!options_node_name_ok(node)) {
		snprintf(why, whylen,
			 "%s '%s' is not a valid node name: expected 1 to 64 letters, digits, '.', "
			 "'_' or '-', not starting with '.' or '-'%s",
			 e->o.node ? "--node" : "the host name", node,
			 e->o.node ? "" : " (give one with --node NAME)");
		return OUTCOME_USAGE;
	}
	snprintf(res->node, sizeof(res->node), "%s", node);
	char token[FS_TOKEN_LEN + 1];
	fs_token(token, sizeof(token));
	names_run_tag(res->run_tag, sizeof(res->run_tag), (long)getpid(), token);
	snprintf(res->run_id, sizeof(res->run_id), "%s",
		 e->plan.run.run_id ? e->plan.run.run_id : res->run_tag);
	return OUTCOME_OK;
}

/* What the lock file says of this process. */
static void cmdenv_lock_info(const struct cmdenv *e, const char *command, const char *state,
			     struct runlock_info *me)
{
	memset(me, 0, sizeof(*me));
	me->pid = (long)getpid();
	snprintf(me->node, sizeof(me->node), "%s", e->res.node);
	snprintf(me->run_id, sizeof(me->run_id), "%s", e->res.run_id);
	snprintf(me->command, sizeof(me->command), "%s", command);
	snprintf(me->state, sizeof(me->state), "%s", state);
	me->since = clock_wall();
}

enum outcome cmdenv_lock(struct cmdenv *e, const char *command, const char *state,
			 enum reason *reason, char *why, size_t whylen)
{
	struct runlock_info me;
	int rc;

	cmdenv_lock_info(e, command, state, &me);
	rc = runlock_take(&e->lock, e->res.node, &me, why, whylen);
	if (!rc)
		return OUTCOME_OK;
	*reason = rc == -EBUSY			   ? REASON_BUSY
		  : rc == -ENOSPC || rc == -EDQUOT ? REASON_NO_SPACE
						   : REASON_SETUP_FAILED;
	return OUTCOME_PRECONDITION;
}

void cmdenv_lock_note(struct cmdenv *e, const char *state)
{
	struct runlock_info me;
	int rc;

	cmdenv_lock_info(e, "run", state, &me);
	rc = runlock_note(&e->lock, &me);
	if (rc)
		log_warn("cannot rewrite the lock file '%s': %s", e->lock.path, strerror(-rc));
}

void cmdenv_exe(struct cmdenv *e)
{
	e->res.exe_errno = -selfexe_digest(e->res.exe_sha256);
}

/*
 * How the thread plan's cores were chosen: --cpus, --threads, else the binding this process
 * inherited (Slurm's, when it runs in a Slurm job, or taskset's, a cgroup's), else all cores.
 */
static const char *cmdenv_chosen_by(const struct cmdenv *e)
{
	if (e->o.set_cpus)
		return "cpus";
	if (e->o.set_threads)
		return "threads";
	if (e->res.tplan.allowed_cores < e->res.tplan.machine_cores)
		return getenv("SLURM_JOB_ID") ? "slurm" : "binding";
	return "default";
}

enum outcome cmdenv_threads(struct cmdenv *e, char *why, size_t whylen)
{
	const char *reason = NULL;
	int rc = topo_open(&e->topo);

	if (rc) {
		snprintf(why, whylen, "cannot read the machine topology (hwloc): %s",
			 strerror(-rc));
		return OUTCOME_FAILED;
	}
	rc = topo_plan_build(e->topo, (unsigned)e->o.threads, e->o.set_cpus ? e->o.cpus : NULL,
			     e->o.set_cpus ? e->o.ncpus : 0, &e->res.tplan, &reason);
	if (rc) {
		snprintf(why, whylen, "%s: %s", e->o.set_cpus ? "--cpus" : "--threads",
			 reason ? reason : strerror(-rc));
		return OUTCOME_USAGE;
	}
	e->res.cores_chosen_by = cmdenv_chosen_by(e);
	return OUTCOME_OK;
}

/* --dir: given, a real directory (not a symlink to nowhere), and, when writing, writable. */
enum outcome cmdenv_dir(struct cmdenv *e, bool writing, char *why, size_t whylen)
{
	struct node_result *res = &e->res;
	char real[PATH_MAX], shown[NOTE_PATH_SHOWN + 8];

	if (!e->o.dir) {
		snprintf(why, whylen, "no working directory: give --dir DIR or set STAGEBENCH_DIR");
		return OUTCOME_USAGE;
	}
	note_path_short(e->o.dir, shown, sizeof(shown));
	e->dirfd = open(e->o.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (e->dirfd < 0) {
		int err = errno;
		struct stat st;
		char target[PATH_MAX], t[NOTE_PATH_SHOWN + 8];
		ssize_t n;

		if (err == ENOENT && lstat(e->o.dir, &st) == 0 && S_ISLNK(st.st_mode) &&
		    (n = readlink(e->o.dir, target, sizeof(target) - 1)) >= 0) {
			target[n] = '\0';
			snprintf(why, whylen, "--dir '%s' is a dangling symbolic link (to '%s')",
				 shown, note_path_short(target, t, sizeof(t)));
		} else {
			snprintf(why, whylen, "--dir '%s': %s", shown,
				 err == ENOTDIR ? "not a directory" : strerror(err));
		}
		return OUTCOME_PRECONDITION;
	}
	if (!realpath(e->o.dir, real))
		snprintf(real, sizeof(real), "%s", e->o.dir);
	if (strlen(real) > CMDENV_DIR_MAX) {
		snprintf(why, whylen,
			 "--dir '%s' is too long: its real path has %zu bytes, at most %d are "
			 "allowed (the names of the files in it must fit in %d)",
			 note_path_short(real, shown, sizeof(shown)), strlen(real), CMDENV_DIR_MAX,
			 BENCH_PATH_MAX);
		return OUTCOME_USAGE;
	}
	snprintf(res->dir, sizeof(res->dir), "%s", real);
	res->fs_ok = fs_info_get(res->dir, &res->fs) == 0;
	if (writing && faccessat(e->dirfd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
		int err = errno;
		snprintf(why, whylen, "--dir '%s' is not writable: %s", res->dir, strerror(err));
		return OUTCOME_PRECONDITION;
	}
	return OUTCOME_OK;
}

void cmdenv_clock(struct cmdenv *e)
{
	e->res.ntp_ok = clock_ntp_read(&e->res.ntp) == 0;
}

/* Space and inodes the command will need in --dir, counted before anything is written. */
void cmdenv_needs(struct cmdenv *e, uint64_t *bytes, uint64_t *inodes)
{
	inventory_needs(&e->plan, e->dirfd, e->res.tplan.nslots, bytes, inodes);
}

/* Leftovers of earlier runs in --dir are said (stderr, and the summary's warnings). */
static void cmdenv_leftovers(struct cmdenv *e)
{
	struct inventory *inv = malloc(sizeof(*inv));
	char line[1024];

	if (inv && inventory_take(e->dirfd, false, inv) == 0) {
		inventory_leftovers_line(inv, e->res.dir, clock_wall(), line, sizeof(line));
		if (line[0])
			note_warning(&e->res, "%s", line);
	}
	free(inv);
}

enum outcome cmdenv_preflight(struct cmdenv *e, char *why, size_t whylen)
{
	uint64_t bytes, inodes;
	char a[32], b[32];

	cmdenv_leftovers(e);
	if (!e->res.fs_ok)
		return OUTCOME_OK;
	cmdenv_needs(e, &bytes, &inodes);
	if (bytes > e->res.fs.bytes_free) {
		snprintf(why, whylen, "not enough space in '%s': the run needs %s, %s are free",
			 e->res.dir, size_format(bytes, a, sizeof(a)),
			 size_format(e->res.fs.bytes_free, b, sizeof(b)));
		return OUTCOME_PRECONDITION;
	}
	if (e->res.fs.inodes_total && inodes > e->res.fs.inodes_free) {
		snprintf(why, whylen,
			 "not enough inodes in '%s': the run needs %llu, %llu are free", e->res.dir,
			 (unsigned long long)inodes, (unsigned long long)e->res.fs.inodes_free);
		return OUTCOME_PRECONDITION;
	}
	return OUTCOME_OK;
}

void cmdenv_dry_run(struct cmdenv *e)
{
	uint64_t bytes, inodes;

	cmdenv_needs(e, &bytes, &inodes);
	views_dry_run(&e->plan, &e->res, e->dirfd, bytes, inodes, stdout);
}

int cmdenv_finish(struct cmdenv *e, enum outcome out)
{
	runlock_close(&e->lock);
	if (e->topo)
		topo_close(e->topo);
	if (e->dirfd > 0)
		close(e->dirfd);
	result_free(&e->res);
	return outcome_exit_code(out);
}

/* Print one line, map the outcome, release what was acquired. */
int cmdenv_fail(struct cmdenv *e, enum outcome out, const char *why)
{
	log_err("%s", why);
	return cmdenv_finish(e, out);
}

int cmdenv_hung_dir_deadline(int default_s)
{
	const char *v = getenv(CMDENV_HUNG_DIR_ENV);
	uint64_t s;

	if (!v || size_parse_uint(v, &s) != 0 || s < 1 || s > CMDENV_HUNG_DIR_MAX)
		return default_s;
	return (int)s;
}

/* How info and check open --dir: called in the child process that may hang on it. */
enum outcome cmdenv_check_dir(void *ctx, int *dirfd, char *why, size_t whylen)
{
	struct cmdenv *e = ctx;
	enum outcome out = cmdenv_dir(e, false, why, whylen);

	*dirfd = e->dirfd;
	return out;
}

/* In that child process, before it exits: what it inherited of the command, freed. */
void cmdenv_child_release(void *ctx)
{
	struct cmdenv *e = ctx;

	if (e->topo)
		topo_close(e->topo);
	e->topo = NULL;
	if (e->dirfd >= 0)
		close(e->dirfd);
	e->dirfd = -1;
	result_free(&e->res);
	/* The child's stdout is /dev/null: what the parent had buffered goes nowhere. */
	output_stdout_close(0);
}
