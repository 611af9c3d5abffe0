/*
 * spool: runs kept as files while their PostgreSQL history is away, and
 * sending them once it answers again (a file is claimed by renaming it).
 */
#include "store/spool.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
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
	json_t *doc = json_pack("{s:s,s:o}", "db", db, "run", nw_run_to_json(run, 1));
	int rc = doc ? json_dump_file(doc, tmp, JSON_COMPACT) : -1;
	json_decref(doc);
	if (rc == 0 && rename(tmp, path) == 0)
		return err_append(err, errlen, 0, "; the run was kept in %s and 'ncclwatch history sync' (or the next "
		                  "run recorded) sends it", dir);
	int why = errno; /* before unlink sets its own */
	unlink(tmp);
	return err_append(err, errlen, -1, "; the run is lost: cannot write to the spool %s: %s", dir, strerror(why));
}

/* Send one claimed spool file; 0 sent, 1 meant for another database, -1 failed (err). */
static int send_one(struct nw_store *s, const char *db, const char *file, char *err, size_t errlen)
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
	int rc = nw_run_from_json(json_object_get(doc, "run"), &run, err, errlen);
	json_decref(doc);
	if (rc)
		return -1;
	/* sent before, but its file was not removed (the sender died after the commit): stored once */
	char key[NW_STORE_KEY_LEN];
	nw_store_run_key(&run, key, sizeof(key));
	rc = nw_store_has_key(s, key, err, errlen);
	if (rc == 0) {
		long long id;
		rc = nw_store_insert(s, &run, &id, err, errlen);
	}
	nw_run_release(&run);
	return rc < 0 ? -1 : 0;
}

int nw_spool_send(struct nw_store *s, const char *db, size_t *sent, size_t *left, char *err,
                  size_t errlen)
{
	size_t nsent = 0, nleft = 0;
	char dir[PATH_MAX];
	DIR *d = spool_dir(dir, sizeof(dir)) ? NULL : opendir(dir);
	int rc = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 5, ".json"))
			continue;
		char file[PATH_MAX + 300], claimed[PATH_MAX + 340];
		snprintf(file, sizeof(file), "%s/%s", dir, e->d_name);
		snprintf(claimed, sizeof(claimed), "%s.sending-%ld", file, (long)getpid());
		if (rename(file, claimed) != 0)
			continue; /* another sender took it */
		char why[NW_ERRLEN] = "";
		int one = send_one(s, db, claimed, why, sizeof(why));
		if (one == 0) {
			unlink(claimed);
			nsent++;
			continue;
		}
		rename(claimed, file);
		if (one < 0) {
			nleft++;
			if (!rc && err)
				nw_seterr(err, errlen, "%s", why);
			rc = -1;
		}
	}
	if (d)
		closedir(d);
	if (sent)
		*sent = nsent;
	if (left)
		*left = nleft;
	return rc;
}
