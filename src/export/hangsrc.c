/* SPDX-License-Identifier: Apache-2.0 */
/* hangsrc: progress from stats files and trace dumps into model/progress (see hangsrc.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/hangsrc.h"
#include "util/util.h"

/*
 * The largest trace dump read (the plugin writes a few MB at most: 1024
 * ring entries of some 300 bytes per communicator), the bound NCCL RAS
 * answers have too: a larger file is refused, not parsed.
 */
#define DUMP_MAX ((size_t)64 << 20)

/* One stats file's rank, as the model sees it. */
static void rank_from_stats(const struct nw_sf_rank *f, struct nw_prog_rank *r)
{
	const struct nws_header *h = &f->hdr;
	const struct nws_progress *p = &h->prog;
	nw_prog_rank_init(r, h->rank);
	snprintf(r->host, sizeof(r->host), "%s", h->hostname);
	r->pid = h->pid;
	r->src = NW_PROG_SRC_STATS;
	r->dead = f->live == NW_SF_STALE;
	r->finished = f->live == NW_SF_FINISHED;
	r->completion = p->completion;
	for (int op = 0; op < NWS_NOPS; op++) {
		r->enq[op] = p->enq_count[op];
		r->done[op] = p->completion == NWS_DONE_KERNEL ? p->done_count[op] : NW_PROG_UNKNOWN;
	}
	if (p->enq_op < NWS_NOPS && p->enq_ns) {
		r->last_op = (int)p->enq_op;
		r->last_seq = p->enq_seq;
		r->last_bytes = p->enq_bytes;
		r->last_enq_ns = p->enq_ns;
	}
	r->inflight = p->completion == NWS_DONE_NONE ? NW_PROG_UNKNOWN : p->inflight;
	if (p->inflight && p->oldest_op < NWS_NOPS) {
		r->oldest_inflight_ns = p->oldest_ns;
		r->oldest_op = (int)p->oldest_op;
		r->oldest_seq = p->oldest_seq;
	}
	r->last_event_ns = p->last_event_ns;
	r->hung = p->hang == NWS_HANG_YES;
	if (r->dead || r->finished)
		r->seen_ns = h->updated_ns; /* figures stopped then */
}

int nw_hangsrc_stats(const struct nw_sf_set *set, struct nw_prog_set *s, size_t *ndisabled, char *err,
                     size_t errlen)
{
	*ndisabled = 0;
	for (size_t i = 0; i < set->n; i++) {
		const struct nw_sf_rank *f = &set->ranks[i];
		if (f->live == NW_SF_DISABLED) {
			(*ndisabled)++;
			continue;
		}
		struct nw_prog_rank r;
		rank_from_stats(f, &r);
		struct nw_prog_comm c = { .comm_hash = f->hdr.comm_hash, .nranks = f->hdr.nranks, .ranks = &r, .n = 1 };
		snprintf(c.name, sizeof(c.name), "%s", f->hdr.comm_name);
		if (nw_prog_set_merge(s, &c, 1, err, errlen) != 0)
			return -1;
	}
	return 0;
}

/* enum nws_op of an op name, -1 for "" or an unknown name. */
static int op_by_name(const char *s)
{
	for (unsigned op = 0; s && *s && op < NWS_NOPS; op++)
		if (!strcmp(s, nws_op_name(op)))
			return (int)op;
	return -1;
}

static unsigned completion_by_name(const char *s)
{
	static const char *const names[] = { "none", "sampled", "kernel", "proxy" };
	for (unsigned i = 0; s && i < NW_ARRAY_LEN(names); i++)
		if (!strcmp(s, names[i]))
			return i;
	return NWS_DONE_NONE;
}

/* A whole number field of o into *v; -1 with err naming it when absent or not a number. */
static int get_u64(const json_t *o, const char *key, uint64_t *v, const char *path, size_t idx, char *err,
                   size_t errlen)
{
	json_t *x = json_object_get(o, key);
	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return nw_seterr(err, errlen, "'%s': progress entry %zu has no whole number \"%s\"", path, idx, key);
	*v = (uint64_t)json_integer_value(x);
	return 0;
}

/* A counts array ("enq", "done") of NWS_NOPS whole numbers. */
static int get_counts(const json_t *o, const char *key, uint64_t *v, const char *path, size_t idx, char *err,
                      size_t errlen)
{
	json_t *a = json_object_get(o, key);
	if (!json_is_array(a) || json_array_size(a) != NWS_NOPS)
		return nw_seterr(err, errlen, "'%s': progress entry %zu: \"%s\" is not an array of %d counts", path,
		                 idx, key, NWS_NOPS);
	for (size_t op = 0; op < NWS_NOPS; op++) {
		json_t *x = json_array_get(a, op);
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return nw_seterr(err, errlen, "'%s': progress entry %zu: \"%s\"[%zu] is not a count", path, idx,
			                 key, op);
		v[op] = (uint64_t)json_integer_value(x);
	}
	return 0;
}

/* The numbers of one progress entry (every one required). */
static int entry_numbers(const json_t *o, struct nw_prog_rank *r, uint64_t *nranks, const char *path, size_t idx,
                         char *err, size_t errlen)
{
	uint64_t rank, pid, enq[NWS_NOPS], done[NWS_NOPS];
	if (get_u64(o, "rank", &rank, path, idx, err, errlen) || get_u64(o, "nranks", nranks, path, idx, err, errlen) ||
	    get_u64(o, "pid", &pid, path, idx, err, errlen) ||
	    get_u64(o, "last_event_ns", &r->last_event_ns, path, idx, err, errlen) ||
	    get_u64(o, "inflight", &r->inflight, path, idx, err, errlen) ||
	    get_u64(o, "oldest_ns", &r->oldest_inflight_ns, path, idx, err, errlen) ||
	    get_u64(o, "oldest_seq", &r->oldest_seq, path, idx, err, errlen) ||
	    get_u64(o, "enq_seq", &r->last_seq, path, idx, err, errlen) ||
	    get_u64(o, "enq_bytes", &r->last_bytes, path, idx, err, errlen) ||
	    get_u64(o, "enq_ns", &r->last_enq_ns, path, idx, err, errlen) ||
	    get_u64(o, "now_ns", &r->seen_ns, path, idx, err, errlen) ||
	    get_counts(o, "enq", enq, path, idx, err, errlen) || get_counts(o, "done", done, path, idx, err, errlen))
		return -1;
	if (*nranks > NW_PROG_MAX_RANKS)
		return nw_seterr(err, errlen, "'%s': progress entry %zu: %" PRIu64 " ranks is more than the %d a "
		                 "communicator may have here", path, idx, *nranks, NW_PROG_MAX_RANKS);
	if (rank >= (uint64_t)*nranks)
		return nw_seterr(err, errlen, "'%s': progress entry %zu: rank %" PRIu64 " of %" PRIu64 " ranks", path,
		                 idx, rank, *nranks);
	r->rank = (int)rank;
	r->pid = (int)(pid > INT32_MAX ? 0 : pid);
	memcpy(r->enq, enq, sizeof(enq));
	memcpy(r->done, done, sizeof(done));
	return 0;
}

/* One otherData.progress entry into a one-rank communicator c (its rank in *r). */
static int entry_to_comm(const json_t *o, struct nw_prog_comm *c, struct nw_prog_rank *r, const char *path,
                         size_t idx, char *err, size_t errlen)
{
	const char *hash = json_string_value(json_object_get(o, "comm"));
	char *end = NULL;
	if (!json_is_object(o) || !hash || strlen(hash) != 16)
		return nw_seterr(err, errlen, "'%s': progress entry %zu has no \"comm\" of 16 hex digits", path, idx);
	errno = 0;
	uint64_t h = strtoull(hash, &end, 16);
	if (errno || *end)
		return nw_seterr(err, errlen, "'%s': progress entry %zu: \"comm\" '%s' is not hex", path, idx, hash);
	nw_prog_rank_init(r, 0);
	uint64_t nranks;
	if (entry_numbers(o, r, &nranks, path, idx, err, errlen) != 0)
		return -1;
	const char *host = json_string_value(json_object_get(o, "host"));
	snprintf(r->host, sizeof(r->host), "%s", host ? host : "");
	r->src = NW_PROG_SRC_DUMP;
	r->completion = completion_by_name(json_string_value(json_object_get(o, "completion")));
	if (r->completion != NWS_DONE_KERNEL)
		for (int op = 0; op < NWS_NOPS; op++)
			r->done[op] = NW_PROG_UNKNOWN;
	if (r->completion == NWS_DONE_NONE)
		r->inflight = NW_PROG_UNKNOWN;
	r->last_op = op_by_name(json_string_value(json_object_get(o, "enq_op")));
	r->oldest_op = op_by_name(json_string_value(json_object_get(o, "oldest_op")));
	r->hung = json_is_true(json_object_get(o, "hung"));
	memset(c, 0, sizeof(*c));
	c->comm_hash = h;
	c->nranks = (int)nranks;
	const char *name = json_string_value(json_object_get(o, "name"));
	snprintf(c->name, sizeof(c->name), "%s", name ? name : "");
	c->ranks = r;
	c->n = 1;
	return 0;
}

int nw_hangsrc_dump_text(const char *text, size_t len, const char *path, struct nw_prog_set *s, char *err,
                         size_t errlen)
{
	json_error_t je;
	json_t *doc = json_loadb(text, len, 0, &je);
	if (!doc)
		return nw_seterr(err, errlen, "'%s' is not JSON (line %d: %s)", path, je.line, je.text);
	json_t *prog = json_object_get(json_object_get(doc, "otherData"), "progress");
	int rc = 0;
	if (!json_is_array(prog))
		rc = nw_seterr(err, errlen,
		               "'%s' has no otherData.progress: not a trace dump of an ncclwatch plugin with hang support (write one with SIGUSR2 or the dump trigger file)",
		               path);
	for (size_t i = 0; rc == 0 && i < json_array_size(prog); i++) {
		struct nw_prog_comm c;
		struct nw_prog_rank r;
		rc = entry_to_comm(json_array_get(prog, i), &c, &r, path, i, err, errlen);
		if (rc == 0)
			rc = nw_prog_set_merge(s, &c, 1, err, errlen);
	}
	json_decref(doc);
	return rc;
}

/*
 * The text of one dump (malloc'd, NUL-terminated, its length in *len): a
 * regular file of at most DUMP_MAX bytes, opened without blocking (a FIFO
 * named *.json is refused at once, never waited on). NULL with err.
 */
static char *dump_read(const char *path, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	char *text = NULL;
	if (fd < 0 || fstat(fd, &st) != 0)
		nw_seterr(err, errlen, "cannot read trace dump '%s': %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		nw_seterr(err, errlen, "trace dump '%s' is not a regular file (%s): give the dump files or their directory",
		          path, S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
	else if ((uint64_t)st.st_size > DUMP_MAX)
		nw_seterr(err, errlen, "trace dump '%s' is %lld bytes, more than the %zu MiB a dump of the plugin can be: "
		          "not a trace dump", path, (long long)st.st_size, DUMP_MAX >> 20);
	else {
		text = nw_malloc((size_t)st.st_size + 1);
		*len = 0;
		for (;;) {
			ssize_t n = read(fd, text + *len, (size_t)st.st_size - *len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				nw_seterr(err, errlen, "cannot read trace dump '%s': %s", path, strerror(errno));
				free(text);
				text = NULL;
			}
			if (n <= 0 || (*len += (size_t)n) == (size_t)st.st_size)
				break;
		}
		if (text)
			text[*len] = '\0';
	}
	if (fd >= 0)
		close(fd);
	return text;
}

/* One dump file into s. */
static int dump_file(const char *path, struct nw_prog_set *s, char *err, size_t errlen)
{
	size_t len = 0;
	char *text = dump_read(path, &len, err, errlen);
	if (!text)
		return -1;
	int rc = nw_hangsrc_dump_text(text, len, path, s, err, errlen);
	free(text);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.json files of dir, sorted, as owned paths; -1 with err. */
static int dump_dir(const char *dir, struct nw_prog_set *s, size_t *nfiles, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d)
		return nw_seterr(err, errlen, "cannot read directory '%s': %s", dir, strerror(errno));
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l > 5 && !strcmp(e->d_name + l - 5, ".json")) {
			names = nw_realloc(names, (n + 1) * sizeof(*names));
			names[n++] = nw_asprintf("%s/%s", dir, e->d_name);
		}
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	int rc = n ? 0 : nw_seterr(err, errlen, "no trace dumps (*.json) in '%s'", dir);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && (rc = dump_file(names[i], s, err, errlen)) == 0)
			(*nfiles)++;
		free(names[i]);
	}
	free(names);
	return rc;
}

int nw_hangsrc_dumps(const char *path, struct nw_prog_set *s, size_t *nfiles, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return nw_seterr(err, errlen, "cannot read '%s': %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return dump_dir(path, s, nfiles, err, errlen);
	if (dump_file(path, s, err, errlen) != 0)
		return -1;
	(*nfiles)++;
	return 0;
}
