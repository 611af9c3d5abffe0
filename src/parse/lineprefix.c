/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lineprefix: the prefixes launchers, loggers and terminals put in front
 * of a line, recognised one by one and taken off (see lineprefix.h for
 * the list), and where an NCCL log line starts.
 */
#include "parse/lineprefix.h"

#include <string.h>

#include "parse/ncclog_text.h"
#include "util/util.h"

static int is_host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' ||
	       c == '.' || c == '_';
}

/*
 * A character of the host in NCCL's own "host:pid:tid" prefix: what
 * gethostname gives, plus what people paste in its place ("<cluster_name>",
 * "user@host", "host[3]").
 */
static int is_nccl_host_char(char c)
{
	/* a bitmap of [A-Za-z0-9._<>@\[\]-] by byte (bytes 0x80 and up: none): read on every line, so no branches */
	static const uint64_t map[2] = { 0x53ff600000000000ull, 0x07fffffeafffffffull };
	unsigned char u = (unsigned char)c;
	return u < 128 && (map[u >> 6] >> (u & 63)) & 1;
}

/*
 * Length of a colour sequence pasted as text at s: "ESC[36m" (as a pager
 * shows it) or a Windows console's "\u2190[36m"; 0 when s starts with none.
 */
static size_t text_ansi(const char *s, size_t len)
{
	size_t i;
	if (len >= 4 && !memcmp(s, "ESC[", 4))
		i = 4;
	else if (len >= 4 && !memcmp(s, "\xe2\x86\x90[", 4))
		i = 4;
	else
		return 0;
	while (i < len && (is_digit(s[i]) || s[i] == ';') && i < 16)
		i++;
	return i < len && s[i] == 'm' ? i + 1 : 0;
}

/* Remove colour sequences pasted as text (text_ansi) in place. */
static size_t strip_text_ansi(char *s, size_t len)
{
	size_t r = 0, w = 0;
	while (r < len) {
		size_t k = (s[r] == 'E' || s[r] == '\xe2') ? text_ansi(s + r, len - r) : 0;
		if (k) {
			r += k;
			continue;
		}
		s[w++] = s[r++];
	}
	return w;
}

/* Remove ANSI escape sequences (CSI "ESC [ ... final" and two-byte ESC x) in place. */
static size_t strip_ansi(char *s, size_t len)
{
	size_t r = 0, w = 0;
	while (r < len) {
		if (s[r] != '\x1b') {
			s[w++] = s[r++];
			continue;
		}
		r++;
		if (r < len && s[r] == '[') {
			r++;
			while (r < len && !((s[r] >= '@' && s[r] <= '~')))
				r++;
			if (r < len)
				r++;
		} else if (r < len) {
			r++;
		}
	}
	return w;
}

/* Append s[0..n) to the tag (stacked prefixes are joined with '/'). */
static void set_tag(struct nw_lp *lp, const char *s, size_t n)
{
	if (!lp)
		return;
	size_t used = strlen(lp->tag);
	if (used && used + 1 < sizeof(lp->tag))
		lp->tag[used++] = '/';
	if (n >= sizeof(lp->tag) - used)
		n = sizeof(lp->tag) - used - 1;
	memcpy(lp->tag + used, s, n);
	lp->tag[used + n] = '\0';
}

/* Skip one space or tab after a prefix. */
static size_t skip_one_space(const char *s, size_t len, size_t i)
{
	if (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

/* "[1,3]<stdout>:" (Open MPI --tag-output). Returns its length or 0. */
static size_t mpi_tag(const char *s, size_t len, struct nw_lp *lp)
{
	size_t i = 1;
	if (len < 14 || s[0] != '[')
		return 0;
	while (i < len && is_digit(s[i]))
		i++;
	if (i == 1 || i >= len || s[i] != ',')
		return 0;
	i++;
	size_t d = i;
	while (i < len && is_digit(s[i]))
		i++;
	if (i == d || i >= len || s[i] != ']')
		return 0;
	size_t close = i;
	i++;
	if (len - i >= 9 && (!memcmp(s + i, "<stdout>:", 9) || !memcmp(s + i, "<stderr>:", 9))) {
		set_tag(lp, s + 1, close - 1);
		return skip_one_space(s, len, i + 9);
	}
	return 0;
}

/* "[rank3]:" or "[default0]:" (PyTorch, torchrun --tee). Returns its length or 0. */
static size_t bracket_rank_tag(const char *s, size_t len, struct nw_lp *lp)
{
	size_t i = 1;
	if (len < 4 || s[0] != '[')
		return 0;
	while (i < len && i < 24 && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
		i++;
	size_t d = i;
	while (i < len && is_digit(s[i]))
		i++;
	if (i == d || i + 1 >= len || s[i] != ']' || s[i + 1] != ':')
		return 0;
	set_tag(lp, s + 1, i - 1);
	return skip_one_space(s, len, i + 2);
}

/* Ray's worker prefix "(RayWorkerWrapper pid=803, ip=10.0.0.7) " or "(pid=803) ". */
static size_t ray_tag(const char *s, size_t len, struct nw_lp *lp)
{
	if (len < 8 || s[0] != '(')
		return 0;
	const char *close = memchr(s, ')', len < 200 ? len : 200);
	if (!close || !memmem(s, (size_t)(close - s), "pid=", 4))
		return 0;
	size_t i = (size_t)(close - s) + 1;
	if (i < len && s[i] != ' ')
		return 0;
	set_tag(lp, s + 1, (size_t)(close - s) - 1);
	return skip_one_space(s, len, i);
}

/* A leading timestamp: "2026-11-30T11:39:33.123456Z ", "2026-11-30 11:39:33,123 ", "[2026-11-30 11:39:33] ". */
static size_t timestamp(const char *s, size_t len)
{
	size_t i = 0;
	int bracket = 0;
	if (len && s[0] == '[') {
		bracket = 1;
		i = 1;
	}
	if (len - i < 19)
		return 0;
	const char *p = s + i;
	if (!(is_digit(p[0]) && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) && p[4] == '-' &&
	      is_digit(p[5]) && is_digit(p[6]) && p[7] == '-' && is_digit(p[8]) && is_digit(p[9]) &&
	      (p[10] == 'T' || p[10] == ' ') && is_digit(p[11]) && is_digit(p[12]) && p[13] == ':' &&
	      is_digit(p[14]) && is_digit(p[15]) && p[16] == ':' && is_digit(p[17]) && is_digit(p[18])))
		return 0;
	i += 19;
	while (i < len && (is_digit(s[i]) || s[i] == '.' || s[i] == ',' || s[i] == 'Z' || s[i] == '+' ||
	                   s[i] == ':' || (s[i] == '-' && i + 1 < len && is_digit(s[i + 1]))))
		i++;
	if (bracket) {
		if (i >= len || s[i] != ']')
			return 0;
		i++;
	}
	if (i < len && s[i] != ' ' && s[i] != '\t')
		return 0;
	return skip_one_space(s, len, i);
}

static int is_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

static int is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

/* "Aug" at s: an English month abbreviation (as ctime and syslog write it). */
static int is_month(const char *s)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	for (size_t i = 0; i + 3 <= sizeof(months) - 1; i += 3)
		if (!memcmp(s, months + i, 3))
			return 1;
	return 0;
}

/* "Aug 11 12:31:45" or "Aug  1 12:31:45" at s (15 bytes); 0 when not. */
static int month_day_time(const char *s, size_t len)
{
	if (len < 15 || !is_month(s) || s[3] != ' ')
		return 0;
	if (!((s[4] == ' ' || is_digit(s[4])) && is_digit(s[5]) && s[6] == ' '))
		return 0;
	const char *t = s + 7;
	return is_digit(t[0]) && is_digit(t[1]) && t[2] == ':' && is_digit(t[3]) && is_digit(t[4]) && t[5] == ':' &&
	       is_digit(t[6]) && is_digit(t[7]);
}

/*
 * ctime's "Fri Aug 11 12:31:45 2023" (Open MPI's --timestamp-output puts it
 * right before "[1,0]<stdout>:", without a space). Returns its length or 0.
 */
static size_t ctime_stamp(const char *s, size_t len)
{
	if (len < 24 || !is_upper(s[0]) || !is_lower(s[1]) || !is_lower(s[2]) || s[3] != ' ' ||
	    !month_day_time(s + 4, len - 4))
		return 0;
	const char *y = s + 19;
	if (!(y[0] == ' ' && is_digit(y[1]) && is_digit(y[2]) && is_digit(y[3]) && is_digit(y[4])))
		return 0;
	return skip_one_space(s, len, 24);
}

/* A syslog timestamp "Aug 11 12:31:45" (with an optional fraction). Returns its length with one blank, or 0. */
static size_t syslog_stamp(const char *s, size_t len)
{
	if (!month_day_time(s, len))
		return 0;
	size_t i = 15;
	if (i < len && s[i] == '.')
		for (i++; i < len && is_digit(s[i]); i++)
			;
	if (i >= len || s[i] != ' ')
		return 0;
	return i + 1;
}

/*
 * What syslog and journald put after their timestamp: "host prog[pid]: "
 * or "host prog: ". The host becomes the tag. Returns its length or 0.
 */
static size_t syslog_source(const char *s, size_t len, struct nw_lp *lp)
{
	size_t i = 0;
	while (i < len && i < 128 && is_host_char(s[i]))
		i++;
	size_t host_end = i;
	if (!host_end || i >= len || s[i] != ' ')
		return 0;
	size_t p = ++i;
	while (i < len && i < 256 && (is_host_char(s[i]) || s[i] == '/'))
		i++;
	if (i == p || i >= len)
		return 0;
	if (s[i] == '[') {
		size_t d = ++i;
		while (i < len && is_digit(s[i]))
			i++;
		if (i == d || i >= len || s[i] != ']')
			return 0;
		i++;
	}
	if (i + 1 >= len || s[i] != ':' || s[i + 1] != ' ')
		return 0;
	set_tag(lp, s, host_end);
	return i + 2;
}

/* kubectl logs --prefix: "[pod/trainer-0/pytorch] "; the pod becomes the tag. Returns its length or 0. */
static size_t kube_tag(const char *s, size_t len, struct nw_lp *lp)
{
	if (len < 8 || memcmp(s, "[pod/", 5))
		return 0;
	size_t i = 5, pod = 5;
	while (i < len && i < 300 && s[i] != ']' && s[i] != '/' && s[i] != ' ')
		i++;
	size_t pod_end = i;
	if (pod_end == pod || i >= len || s[i] != '/')
		return 0;
	while (i < len && i < 300 && s[i] != ']' && s[i] != ' ')
		i++;
	if (i + 1 >= len || s[i] != ']' || s[i + 1] != ' ')
		return 0;
	set_tag(lp, s + pod, pod_end - pod);
	return i + 2;
}

/*
 * Open MPI's "[host:pid] " before its signal report and UCX's
 * "[host:pid:tid:n] " before "Caught signal": the host and pid of the
 * process that wrote it go to lp. Returns its length or 0.
 */
static size_t bracket_host_pid(const char *s, size_t len, struct nw_lp *lp)
{
	if (len < 6 || s[0] != '[')
		return 0;
	size_t i = 1;
	while (i < len && i < 128 && is_host_char(s[i]))
		i++;
	size_t host_end = i;
	if (host_end == 1 || i >= len || s[i] != ':')
		return 0;
	long pid = 0;
	for (int field = 0; field < 4 && i < len && s[i] == ':'; field++) {
		size_t d = ++i;
		long v = 0;
		while (i < len && is_digit(s[i]) && i - d < 9)
			v = v * 10 + (s[i++] - '0');
		if (i == d)
			return 0;
		if (field == 0)
			pid = v;
	}
	if (i + 1 >= len || s[i] != ']' || s[i + 1] != ' ')
		return 0;
	if (lp) {
		size_t n = host_end - 1 < sizeof(lp->host) - 1 ? host_end - 1 : sizeof(lp->host) - 1;
		memcpy(lp->host, s + 1, n);
		lp->host[n] = '\0';
		lp->pid = pid;
	}
	return i + 2;
}

/* Length of the ISO timestamp at s ("2025-05-16T16:39:51.208-07:00", "2024-11-28T07:42:11.527Z"), 0 when none. */
static size_t iso_time(const char *s, size_t len)
{
	if (len < 19)
		return 0;
	const char *p = s;
	if (!(is_digit(p[0]) && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) && p[4] == '-' && is_digit(p[5]) &&
	      is_digit(p[6]) && p[7] == '-' && is_digit(p[8]) && is_digit(p[9]) && (p[10] == 'T' || p[10] == ' ') &&
	      is_digit(p[11]) && is_digit(p[12]) && p[13] == ':' && is_digit(p[14]) && is_digit(p[15]) && p[16] == ':' &&
	      is_digit(p[17]) && is_digit(p[18])))
		return 0;
	size_t i = 19;
	while (i < len && (is_digit(s[i]) || s[i] == '.' || s[i] == ',' || s[i] == 'Z' || s[i] == '+' || s[i] == ':' ||
	                   (s[i] == '-' && i + 1 < len && is_digit(s[i + 1]))))
		i++;
	return i;
}

/*
 * A row of a table copied from AWS CloudWatch: "  | 2025-05-16T16:39:51.208-07:00 | ".
 * Some rows lose the cell's end and repeat their text: "  | <time><text> | <text>";
 * then *glued is set (the caller drops the repeat). Returns the cell's length or 0.
 */
static size_t cloudwatch_cell(const char *s, size_t len, int *glued)
{
	size_t i = 0;
	while (i < len && i < 16 && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i + 2 >= len || s[i] != '|' || s[i + 1] != ' ')
		return 0;
	i += 2;
	size_t k = iso_time(s + i, len - i);
	if (!k)
		return 0;
	i += k;
	*glued = 0;
	if (i + 2 < len && s[i] == ' ' && s[i + 1] == '|' && s[i + 2] == ' ')
		return i + 3;
	if (i + 1 < len && s[i] == ' ' && s[i + 1] == '|')
		return len; /* an empty cell at the end */
	if (i == len)
		return len;
	*glued = 1;
	return i;
}

/* The length of s without a repeat "X | X" of itself (CloudWatch's glued rows), else len. */
static size_t drop_repeat(const char *s, size_t len)
{
	if (len < 5 || (len - 3) % 2)
		return len;
	size_t h = (len - 3) / 2;
	return !memcmp(s + h, " | ", 3) && !memcmp(s, s + h + 3, h) ? h : len;
}

/*
 * Ray's log deduplication at the end of a line: " [repeated 40x across
 * cluster]", perhaps followed by Ray's note "(Ray deduplicates logs by
 * default. ...)". Returns the line's length without it and sets *count; len
 * and 0 when there is none.
 */
static size_t ray_tail(const char *s, size_t len, long *count)
{
	size_t from = len > 400 ? len - 400 : 0;
	const char *p = find_n(s + from, len - from, "[repeated ", 10);
	*count = 0;
	if (!p)
		return len;
	size_t i = (size_t)(p - s) + 10;
	long v = 0;
	size_t d = i;
	while (i < len && is_digit(s[i]) && i - d < 9)
		v = v * 10 + (s[i++] - '0');
	if (i == d || len - i < 17 || memcmp(s + i, "x across cluster]", 17))
		return len;
	size_t end = (size_t)(p - s);
	while (end && (s[end - 1] == ' ' || s[end - 1] == '\t'))
		end--;
	*count = v;
	return end;
}

size_t nw_lp_nccl_prefix(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len && is_nccl_host_char(s[i]))
		i++;
	if (i == 0 || i >= len || s[i] != ':')
		return 0;
	/* ":pid:tid", or ":pid" alone in some builds */
	for (int field = 0; field < 2; field++) {
		size_t d = ++i;
		while (i < len && is_digit(s[i]))
			i++;
		if (i == d || i >= len)
			return 0;
		if (s[i] != ':')
			break;
	}
	if (s[i] != ' ')
		return 0;
	i++;
	if (i >= len || s[i] != '[')
		return 0;
	i++;
	if (i < len && s[i] == '-')
		i++;
	size_t d = i;
	while (i < len && is_digit(s[i]))
		i++;
	if (i == d || i + 1 >= len || s[i] != ']' || s[i + 1] != ' ')
		return 0;
	return i + 2;
}

/*
 * Text after a pdsh/srun prefix that we accept as program output: NCCL's
 * line, nccl-tests' ("#", or a row starting with blanks), or another
 * launcher prefix. Not any "word: text", which would eat the names of
 * Python exceptions ("DistBackendError: [1] is setting up ...").
 */
static int looks_like_output(const char *s, size_t len)
{
	static const char *const starts_of[] = {
		"NCCL version ", "torch.", "Traceback (", "RuntimeError: ", "[E", "[W", "  File \"", "Caught signal",
		"NCCLWATCH ", /* the ncclwatch plugin's periodic line on stderr */
		"nccl", /* "ncclUnhandledCudaError: Call to CUDA function failed." after PyTorch's error */
		"*** Process received signal", "[E ", "[W ",
	};
	if (!len || s[0] == '#' || s[0] == ' ')
		return 1;
	for (size_t k = 0; k < NW_ARRAY_LEN(starts_of); k++)
		if (len >= strlen(starts_of[k]) && !memcmp(s, starts_of[k], strlen(starts_of[k])))
			return 1;
	return nw_lp_nccl_prefix(s, len) > 0 || mpi_tag(s, len, NULL) || bracket_rank_tag(s, len, NULL) ||
	       ray_tag(s, len, NULL) || timestamp(s, len) || ctime_stamp(s, len) || kube_tag(s, len, NULL) ||
	       bracket_host_pid(s, len, NULL);
}

/* "host: " (pdsh, clush) or "3: " (srun --label), only before program output. */
static size_t host_tag(const char *s, size_t len, struct nw_lp *lp)
{
	size_t i = 0;
	while (i < len && i < 64 && s[i] == ' ')
		i++;
	size_t start = i;
	while (i < len && i < 128 && is_host_char(s[i]))
		i++;
	if (i == start || i + 1 >= len || s[i] != ':' || s[i + 1] != ' ')
		return 0;
	size_t end = i;
	i += 2;
	if (!looks_like_output(s + i, len - i))
		return 0;
	set_tag(lp, s + start, end - start);
	return i;
}

/* Whether a colour code pasted as text is in s: "ESC[" or a console's arrow and '[' (memchr for '[', not memmem twice). */
static int has_text_ansi(const char *s, size_t n)
{
	for (const char *b = memchr(s, '[', n); b; b = memchr(b + 1, '[', n - (size_t)(b + 1 - s)))
		if (b - s >= 3 && (!memcmp(b - 3, "ESC", 3) || !memcmp(b - 3, "\xe2\x86\x90", 3)))
			return 1;
	return 0;
}

size_t nw_lp_strip(char *line, size_t len, size_t *newlen, struct nw_lp *lp)
{
	if (lp) {
		lp->tag[0] = '\0';
		lp->host[0] = '\0';
		lp->pid = 0;
		lp->repeated = 0;
	}
	if (memchr(line, '\x1b', len))
		len = strip_ansi(line, len);
	if (has_text_ansi(line, len))
		len = strip_text_ansi(line, len);
	size_t off = 0;
	int after_stamp = 0, glued = 0;
	for (int round = 0; round < 6; round++) {
		const char *s = line + off;
		size_t n = len - off, k;
		int stamp = 0;
		if (n && s[0] != '[' && s[0] != '(' && !is_digit(s[0]) && !is_host_char(s[0]) && s[0] != ' ' && s[0] != '|')
			break;
		if ((k = cloudwatch_cell(s, n, &glued))) {
			off += k;
			if (glued)
				len = off + drop_repeat(line + off, len - off);
			continue;
		}
		if (nw_lp_nccl_prefix(s, n))
			break;
		for (k = 0; k < n && k < 64 && (s[k] == ' ' || s[k] == '\t'); k++)
			;
		if (k && k < n && (nw_lp_nccl_prefix(s + k, n - k) || mpi_tag(s + k, n - k, NULL) ||
		                   bracket_rank_tag(s + k, n - k, NULL) || ray_tag(s + k, n - k, NULL))) {
			off += k; /* indented when pasted */
			continue;
		}
		if ((k = mpi_tag(s, n, lp)) || (k = bracket_rank_tag(s, n, lp)) || (k = kube_tag(s, n, lp)) ||
		    (k = ray_tag(s, n, lp)) || (k = bracket_host_pid(s, n, lp))) {
			off += k;
		} else if ((k = timestamp(s, n)) || (k = ctime_stamp(s, n)) || (k = syslog_stamp(s, n))) {
			off += k;
			stamp = 1;
		} else if ((after_stamp && (k = syslog_source(s, n, lp))) || (k = host_tag(s, n, lp))) {
			off += k;
		} else {
			break;
		}
		after_stamp = stamp;
	}
	long repeated;
	size_t cut = ray_tail(line + off, len - off, &repeated);
	if (repeated && lp)
		lp->repeated = repeated;
	*newlen = cut;
	return off;
}
