/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spool: runs kept as files while their PostgreSQL history is away, and
 * sending them once it answers again (a file is claimed by renaming it).
 */
#include "store/spool.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/store_int.h"
#include "util/strbuf.h"
#include "util/util.h"

/* The spool directory (not created here). */
static int spool_dir(char *buf, size_t len)
{
	const char *env = getenv("NCCLWATCH_SPOOL");
	const char *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	int n;
	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/ncclwatch/spool", xdg);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.local/share/ncclwatch/spool", home);
	else
		return -1;
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* mkdir -p dir (mode 0700: runs hold command lines and host names). */
static int make_dirs(const char *dir)
{
	char p[PATH_MAX];
	if (nw_strlcpy(p, dir, sizeof(p)) >= sizeof(p))
		return -1;
	for (char *c = p + 1; ; c++) {
		if (*c == '/' || !*c) {
			char keep = *c;
			*c = '\0';
			if (mkdir(p, 0700) != 0 && errno != EEXIST)
				return -1;
			*c = keep;
			if (!keep)
				break;
		}
	}
	return 0;
}

/* More text after what err already says (cut to errlen); returns rc. */
static int err_append(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int err_append(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	nw_strbuf_addstr(&sb, err);
	va_list ap;
	va_start(ap, fmt);
	nw_strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	nw_strlcpy(err, sb.buf, errlen);
	nw_strbuf_release(&sb);
	return rc;
}

int nw_spool_keep(const char *db, const struct nw_run *run, char *err, size_t errlen)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 64], path[PATH_MAX + 64];
	if (spool_dir(dir, sizeof(dir)) || make_dirs(dir))
		return err_append(err, errlen, -1, "; the run is lost: no spool directory (set NCCLWATCH_SPOOL=DIR)");
	static unsigned seq;
	char now[32];
	nw_utc_iso(now, sizeof(now));
	snprintf(path, sizeof(path), "%s/%s-%ld-%u.json", dir, now, (long)getpid(), seq++);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* the key as the run is now: the JSON copy rounds figures the key covers */
	char key[NW_STORE_KEY_LEN];
	nw_store_run_key(run, key, sizeof(key));
	json_t *doc = json_pack("{s:s,s:s,s:o}", "db", db, "key", key, "run", nw_run_to_json(run, 1));
	int rc = doc ? json_dump_file(doc, tmp, JSON_COMPACT) : -1;
	json_decref(doc);
	if (rc == 0 && rename(tmp, path) == 0)
		return err_append(err, errlen, 0, "; the run was kept in %s and 'ncclwatch history sync' (or the next "
		                  "run recorded) sends it", dir);
	int why = errno; /* before unlink sets its own */
	unlink(tmp);
	return err_append(err, errlen, -1, "; the run is lost: cannot write to the spool %s: %s", dir, strerror(why));
}

/* Send one claimed spool file; 0 sent, 2 stored already, 1 meant for another database, -1 failed (err). */
static int send_one(struct nw_store *s, const char *db, const char *file, const char *name, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *doc = json_load_file(file, 0, &jerr);
	const char *for_db = json_string_value(json_object_get(doc, "db"));
	if (!doc || !for_db) {
		json_decref(doc);
		return nw_seterr(err, errlen, "spool file '%s' is unreadable; move it aside", file);
	}
	if (strcmp(for_db, db)) {
		json_decref(doc);
		return 1;
	}
	struct nw_run run;
	char key[NW_STORE_KEY_LEN];
	nw_strlcpy(key, json_string_value(json_object_get(doc, "key")) ? json_string_value(json_object_get(doc, "key")) : "",
	           sizeof(key));
	int rc = nw_run_from_json(json_object_get(doc, "run"), &run, err, errlen);
	json_decref(doc);
	if (rc)
		return -1;
	/* kept by an older ncclwatch without its time: the time it was kept, which starts the file's name */
	if (!run.h.time[0] && strlen(name) > 20 && name[4] == '-' && name[10] == 'T' && name[19] == 'Z')
		snprintf(run.h.time, sizeof(run.h.time), "%.20s", name);
	st_redact_run(&run);
	if (!key[0]) /* kept by an older ncclwatch: the key of what was kept */
		nw_store_run_key(&run, key, sizeof(key));
	/* sent before, but its file was not removed (the sender died after the commit), or taken late: stored once */
	rc = nw_store_has_key(s, key, err, errlen);
	if (rc == 0) {
		long long id;
		rc = st_insert_keyed(s, &run, key, &id, err, errlen);
	} else if (rc == 1) {
		rc = 2;
	}
	nw_run_release(&run);
	return rc;
}

/* How a claim names its sender: ".sending-PID@HOST" (".sending-PID" from older versions: this host). */
#define CLAIM ".sending-"

/*
 * Whether the claim suffix (after ".sending-") was left by a sender that
 * is gone: on this host, a process that no longer runs; on another (a
 * spool on a shared home), one older than an hour.
 */
static int claim_stale(const char *suffix, const char *path)
{
	char *end;
	long pid = strtol(suffix, &end, 10);
	if (end == suffix || pid <= 0)
		return 0;
	char host[256];
	nw_hostname(host, sizeof(host));
	if (*end == '\0' || (*end == '@' && !strcmp(end + 1, host)))
		return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
	struct stat st;
	return stat(path, &st) == 0 && time(NULL) - st.st_ctime > 3600;
}

/*
 * The spool file a directory entry names, ready to claim: "X.json", or a
 * claim "X.json.sending-..." its sender left when it was killed. *stale
 * says which. 0 when the entry is neither.
 */
static int spool_entry(const char *dir, const char *name, char *file, size_t len, int *stale)
{
	const char *claim = strstr(name, ".json" CLAIM);
	size_t n = strlen(name);
	*stale = 0;
	snprintf(file, len, "%s/%s", dir, name);
	if (!claim)
		return n > 5 && !strcmp(name + n - 5, ".json");
	*stale = claim_stale(claim + strlen(".json" CLAIM), file);
	return *stale;
}

/* Whether a failure just met means the rest should wait: the server went away or stopped answering, a stop. */
static int server_away(const struct nw_store *s)
{
	enum nw_db_err cls = s->db->err;
	return cls == NW_DB_LOST || cls == NW_DB_TIMEOUT || cls == NW_DB_STOPPED;
}

int nw_spool_send(struct nw_store *s, const char *db, struct nw_spool_counts *c, char *err, size_t errlen)
{
	struct nw_spool_counts n = { 0, 0, 0, 0 };
	char dir[PATH_MAX], host[256];
	DIR *d = spool_dir(dir, sizeof(dir)) ? NULL : opendir(dir);
	int rc = 0, away = 0;
	struct dirent *e;
	nw_hostname(host, sizeof(host));
	while (d && (e = readdir(d)) != NULL) {
		char file[PATH_MAX + 300], orig[PATH_MAX + 300], claimed[PATH_MAX + 600];
		int stale;
		if (!spool_entry(dir, e->d_name, file, sizeof(file), &stale))
			continue;
		if (away || nw_db_stopping() || (s->db->deadline > 0 && nw_now() > s->db->deadline)) {
			n.left++; /* for the next sender */
			continue;
		}
		nw_strlcpy(orig, file, sizeof(orig));
		if (stale)
			strstr(orig + strlen(dir), ".json" CLAIM)[5] = '\0'; /* the name it had before the claim */
		snprintf(claimed, sizeof(claimed), "%s" CLAIM "%ld@%s", orig, (long)getpid(), host);
		if (rename(file, claimed) != 0)
			continue; /* another sender took it */
		char why[NW_ERRLEN] = "";
		const char *base = strrchr(orig, '/') + 1;
		int one = send_one(s, db, claimed, base, why, sizeof(why));
		if (one == 0 || one == 2) {
			unlink(claimed);
			*(one == 0 ? &n.sent : &n.dup) += 1;
			n.reclaimed += stale != 0;
			continue;
		}
		rename(claimed, orig);
		if (one < 0) {
			n.left++;
			away = server_away(s);
			if (!rc && err)
				nw_seterr(err, errlen, "%s", why);
			rc = -1;
		}
	}
	if (d)
		closedir(d);
	if (c)
		*c = n;
	return rc;
}
