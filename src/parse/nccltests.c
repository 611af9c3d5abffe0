/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nccltests: the entry points of the nccl-tests reader (nccltests.h). They
 * read a file, a stream or a buffer, choose between the -J JSON reader
 * (nt_json.c) and the text reader (nt_text.c), and hand the runs the
 * streams built (nt_stream.c) to the caller.
 */
#include "parse/nccltests.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "parse/nt_int.h"
#include "util/util.h"

#define NT_MAX_LINE 8192     /* longer lines are not nccl-tests output */
#define NT_MAX_INPUT ((size_t)1 << 30)

/* End every stream's table and hand the runs to the caller; returns their number. */
static int ctx_finish(struct nt_ctx *c, struct nw_run **runs, size_t *unparsed)
{
	if (c->seen)
		memset(c->seen, 0, sizeof(*c->seen));
	for (int i = 0; i < c->nstreams; i++) {
		nt_stream_finish(c, c->streams[i]);
		free(c->streams[i]);
	}
	if (unparsed)
		*unparsed = c->unparsed;
	*runs = c->runs;
	return (int)c->nruns;
}

/* Whether s starts a JSON input: '{', or '[' then blanks then '{' (a list of rccl-tests records). */
static int json_start(const char *s, size_t n)
{
	if (!n || (s[0] != '{' && s[0] != '['))
		return 0;
	size_t i = 1;
	while (s[0] == '[' && i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
		i++;
	return s[0] == '{' || (i < n && s[i] == '{');
}

/* JSON when the first non-blank bytes start one (json_start), else text, line by line (lines over 8 KB are unparsed). */
static int parse_buf(const char *buf, size_t len, const char *name, struct nw_run **runs, size_t *unparsed,
                     struct nw_nt_seen *seen)
{
	struct nt_ctx c;
	memset(&c, 0, sizeof(c));
	c.name = name;
	c.seen = seen;
	size_t first = 0;
	while (first < len && (buf[first] == ' ' || buf[first] == '\n' || buf[first] == '\r' || buf[first] == '\t'))
		first++;
	if (json_start(buf + first, len - first)) {
		nt_parse_json(&c, buf + first, len - first);
	} else {
		char *line = nw_malloc(NT_MAX_LINE);
		size_t off = 0;
		while (off < len) {
			const char *nl = memchr(buf + off, '\n', len - off);
			size_t n = nl ? (size_t)(nl - (buf + off)) : len - off;
			if (n >= NT_MAX_LINE) {
				c.unparsed++;
			} else {
				memcpy(line, buf + off, n);
				line[n] = '\0';
				nt_process_line(&c, line, n);
			}
			off += n + (nl ? 1 : 0);
		}
		free(line);
	}
	return ctx_finish(&c, runs, unparsed);
}

int nw_nt_parse_buf(const char *buf, size_t len, const char *name, struct nw_run **runs, size_t *unparsed,
                    char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return parse_buf(buf, len, name, runs, unparsed, NULL);
}

/*
 * Read all of a stream into memory after pre[0..npre) (bytes already read,
 * at most 64 KiB); NULL with errno set on a read error,
 * or with errno EFBIG when it holds more than NT_MAX_INPUT bytes (a -J
 * JSON document is read whole; text is streamed instead).
 */
static char *read_stream(FILE *f, const char *pre, size_t npre, size_t *len_out)
{
	size_t cap = 65536, len = npre;
	char *buf = nw_malloc(cap);
	memcpy(buf, pre, npre);
	for (;;) {
		if (len == cap) {
			if (cap >= NT_MAX_INPUT) {
				free(buf);
				errno = EFBIG;
				return NULL;
			}
			cap *= 2;
			buf = nw_realloc(buf, cap);
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		return NULL;
	}
	*len_out = len;
	return buf;
}

/*
 * Text from f, line by line, without holding the input: first[0..nfirst)
 * is what was already read of it (less than NT_MAX_LINE). Returns the runs'
 * number, or -1 on a read error (errno set).
 */
static int parse_text_stream(FILE *f, const char *first, size_t nfirst, const char *name, struct nw_run **runs,
                             size_t *unparsed, struct nw_nt_seen *seen)
{
	struct nt_ctx c;
	memset(&c, 0, sizeof(c));
	c.name = name;
	c.seen = seen;
	char *line = nw_malloc(NT_MAX_LINE);
	size_t n = 0, used = 0;
	int skipping = 0; /* inside a line over NT_MAX_LINE */
	for (;;) {
		int ch = used < nfirst ? (unsigned char)first[used++] : getc(f);
		if (ch == EOF || ch == '\n') {
			if (!skipping && (n || ch == '\n')) {
				line[n] = '\0';
				nt_process_line(&c, line, n);
			}
			skipping = 0;
			n = 0;
			if (ch == EOF)
				break;
			continue;
		}
		if (skipping)
			continue;
		if (n + 1 >= NT_MAX_LINE) {
			c.unparsed++;
			skipping = 1;
			continue;
		}
		line[n++] = (char)ch;
	}
	free(line);
	int bad = ferror(f);
	int nr = ctx_finish(&c, runs, unparsed);
	if (bad) {
		for (int i = 0; i < nr; i++)
			nw_run_release(&(*runs)[i]);
		free(*runs);
		*runs = NULL;
		errno = EIO;
		return -1;
	}
	return nr;
}

int nw_nt_parse_path(const char *path, struct nw_run **runs, size_t *unparsed, char *err, size_t errlen)
{
	return nw_nt_parse_path_seen(path, runs, unparsed, NULL, err, errlen);
}

/*
 * After a first '[' read from f: it and the blanks that follow into buf
 * (room for len bytes; *n is how many it holds). Returns the next byte,
 * which the caller puts back: '{' when a JSON list starts, else text.
 */
static int peek_list(FILE *f, char *buf, size_t len, size_t *n)
{
	*n = 0;
	buf[(*n)++] = '[';
	int ch;
	while ((ch = getc(f)) == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
		if (*n < len)
			buf[(*n)++] = (char)ch;
	return ch;
}

int nw_nt_parse_stream_seen(FILE *f, const char *name, struct nw_run **runs, size_t *unparsed, struct nw_nt_seen *seen,
                        char *err, size_t errlen)
{
	*runs = NULL;
	char ws[256];
	size_t nws = 0;
	int ch;
	while ((ch = getc(f)) == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
		if (ch == '\n')
			nws = 0;
		else if (nws < sizeof(ws))
			ws[nws++] = (char)ch;
	}
	if (ch == '[') /* a list of rccl-tests records, or a launcher tag ("[1,0]<stdout>:") starting text */
		ch = peek_list(f, ws, sizeof(ws), &nws);
	int n;
	if (ch == '{') {
		ungetc(ch, f);
		size_t len = 0;
		char *buf = read_stream(f, ws, nws, &len);
		if (!buf)
			n = nw_seterr(err, errlen, "cannot read '%s': %s", name,
			              errno == EFBIG ? "a JSON document over 1 GiB" : strerror(errno));
		else
			n = parse_buf(buf, len, name, runs, unparsed, seen);
		free(buf);
	} else {
		if (ch != EOF)
			ungetc(ch, f);
		n = parse_text_stream(f, ws, nws, name, runs, unparsed, seen);
		if (n < 0)
			nw_seterr(err, errlen, "cannot read '%s': %s", name, strerror(errno));
	}
	return n;
}

int nw_nt_parse_path_seen(const char *path, struct nw_run **runs, size_t *unparsed, struct nw_nt_seen *seen,
                          char *err, size_t errlen)
{
	int is_stdin = !strcmp(path, "-");
	*runs = NULL;
	struct stat sb;
	if (!is_stdin && !stat(path, &sb) && S_ISDIR(sb.st_mode))
		return nw_seterr(err, errlen, "'%s' is a directory: name the nccl-tests outputs in it ('%s/*'), "
		                 "each is read as a file of its own", path, path);
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	if (!f)
		return nw_seterr(err, errlen, "cannot read '%s': %s", path, strerror(errno));
	int n = nw_nt_parse_stream_seen(f, is_stdin ? "(stdin)" : path, runs, unparsed, seen, err, errlen);
	if (!is_stdin)
		fclose(f);
	return n;
}

int nw_nt_parse_stream(FILE *f, const char *name, struct nw_run **runs, size_t *unparsed, char *err, size_t errlen)
{
	return nw_nt_parse_stream_seen(f, name, runs, unparsed, NULL, err, errlen);
}

/* scandir's filter: names that do not start with '.' */
static int visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int nw_nt_parse_dir(const char *dir, struct nw_run **runs, size_t *unparsed, char *err, size_t errlen)
{
	struct dirent **names;
	*runs = NULL;
	if (unparsed)
		*unparsed = 0;
	int nn = scandir(dir, &names, visible, alphasort);
	if (nn < 0)
		return nw_seterr(err, errlen, "cannot read the directory '%s': %s", dir, strerror(errno));
	size_t total = 0;
	int rc = 0;
	for (int i = 0; i < nn; i++) {
		char *path = nw_asprintf("%s/%s", dir, names[i]->d_name);
		struct stat sb;
		struct nw_run *r = NULL;
		size_t u = 0;
		int n = 0;
		if (rc == 0 && !stat(path, &sb) && S_ISREG(sb.st_mode))
			n = nw_nt_parse_path(path, &r, &u, err, errlen);
		if (n < 0)
			rc = -1;
		for (int k = 0; k < n; k++) {
			*runs = nw_realloc(*runs, (total + 1) * sizeof(**runs));
			(*runs)[total++] = r[k];
		}
		free(r);
		if (unparsed)
			*unparsed += u;
		free(path);
		free(names[i]);
	}
	free(names);
	if (rc < 0) {
		for (size_t k = 0; k < total; k++)
			nw_run_release(&(*runs)[k]);
		free(*runs);
		*runs = NULL;
		return -1;
	}
	return (int)total;
}
