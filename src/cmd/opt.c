/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The option tables of opt.h: parsing through getopt_long, value checks by
 * kind, help text, man page, completion and the listing the tests walk.
 */
#include "cmd/opt.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cli.h"
#include "util/strbuf.h"
#include "util/util.h"

/* getopt_long's value for long option row i (above any short letter). */
#define LONG_VAL(i) (0x10000 + (i))

static size_t nrows(const struct nw_cmd_spec *spec)
{
	size_t n = 0;
	while (spec->opts && spec->opts[n].kind != NW_OPTK_END)
		n++;
	if (n > NW_OPT_MAX)
		NW_BUG("command '%s' declares %zu option rows, more than NW_OPT_MAX (%d)", spec->name, n, NW_OPT_MAX);
	return n;
}

static int is_option(const struct nw_opt *o)
{
	return o->kind != NW_OPTK_GROUP && o->kind != NW_OPTK_END;
}

/* Whether the row's option takes a value: none, required, or optional (--opt=FILE only). */
static int has_arg(const struct nw_opt *o)
{
	if (o->kind == NW_OPTK_FLAG || (o->kind == NW_OPTK_CALL && (o->flags & NW_OPTF_NOVAL)))
		return no_argument;
	if (o->kind == NW_OPTK_OUTOPT)
		return optional_argument;
	if (o->kind == NW_OPTK_REFUSED)
		return o->argh ? required_argument : no_argument;
	return required_argument;
}

int nw_opt_usage_rc(const struct nw_cmd_spec *spec)
{
	return spec->usage_rc ? spec->usage_rc : 2;
}

int nw_opt_error(const struct nw_cmd_spec *spec, const char *fmt, ...)
{
	char msg[NW_ERRLEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return nw_error("%s; 'ncclwatch help %s' lists the options", msg, spec->name);
}

/* Row index of the long option named name (len characters; a unique prefix will do), or -1. */
static int find_long(const struct nw_cmd_spec *spec, const char *name, size_t len)
{
	int found = -1, nfound = 0;
	for (size_t i = 0; spec->opts && spec->opts[i].kind != NW_OPTK_END; i++) {
		const char *l = spec->opts[i].lname;
		if (!l || !is_option(&spec->opts[i]) || strncmp(l, name, len))
			continue;
		if (strlen(l) == len)
			return (int)i;
		found = (int)i;
		nfound++;
	}
	return nfound == 1 ? found : -1;
}

static int find_short(const struct nw_cmd_spec *spec, int c)
{
	for (size_t i = 0; c > 0 && spec->opts && spec->opts[i].kind != NW_OPTK_END; i++)
		if (spec->opts[i].sname == c && is_option(&spec->opts[i]))
			return (int)i;
	return -1;
}

static int find_row(const struct nw_cmd_spec *spec, const char *lname)
{
	for (size_t i = 0; spec->opts && spec->opts[i].kind != NW_OPTK_END; i++)
		if (spec->opts[i].lname && !strcmp(spec->opts[i].lname, lname))
			return (int)i;
	NW_BUG("command '%s' has no option '--%s'", spec->name, lname);
}

int nw_opt_given(const struct nw_opt_res *res, const char *lname)
{
	return res->given[find_row(res->spec, lname)] != 0;
}

/* The row's option as given (how: 1 long, 2 short), else its long name, else its letter. */
static const char *row_name(const struct nw_opt *o, int how, char *buf, size_t len)
{
	if ((how == 2 || !o->lname) && o->sname)
		snprintf(buf, len, "-%c", o->sname);
	else
		snprintf(buf, len, "--%s", o->lname ? o->lname : "?");
	return buf;
}

/* For messages about a value: as typed, and a short option with its long name, "-N (--run_cycles)". */
static const char *typed_name(const struct nw_opt *o, int how, char *buf, size_t len)
{
	if (how == 2 && o->sname && o->lname)
		snprintf(buf, len, "-%c (--%s)", o->sname, o->lname);
	else
		row_name(o, how, buf, len);
	return buf;
}

const char *nw_opt_name(const struct nw_opt_res *res, const char *lname)
{
	static char name[4][48];
	static int next;
	int i = find_row(res->spec, lname);
	char *buf = name[next++ % 4];
	return row_name(&res->spec->opts[i], res->given[i], buf, sizeof(name[0]));
}

/* The field of row o in opts. */
static void *field(void *opts, const struct nw_opt *o)
{
	return (char *)opts + o->off;
}

static int set_int_like(void *opts, const struct nw_opt *o, long v)
{
	int iv = (int)v;
	memcpy(field(opts, o), &iv, sizeof(iv));
	return 0;
}

static int read_choice(void *opts, const struct nw_opt *o, const char *arg, const char *name, char *err,
                       size_t errlen)
{
	struct nw_strbuf names;
	nw_strbuf_init(&names);
	for (const struct nw_opt_choice *c = o->choices; c && c->name; c++) {
		if (!strcmp(c->name, arg)) {
			nw_strbuf_release(&names);
			return set_int_like(opts, o, c->value);
		}
		nw_strbuf_addf(&names, "%s%s", names.len ? ", " : "", c->name);
	}
	nw_seterr(err, errlen, "%s: '%s' is not one of %s", name, arg, names.buf);
	nw_strbuf_release(&names);
	return -1;
}

/* Read arg (NULL for a flag) as row o says into opts; 0, or -1 with err naming the option as typed. */
static int read_value(void *opts, const struct nw_opt *o, const char *arg, const char *name, char *err,
                      size_t errlen)
{
	long l;
	double d;
	char e2[NW_ERRLEN];
	switch (o->kind) {
	case NW_OPTK_FLAG:
		return set_int_like(opts, o, o->min ? o->min : 1);
	case NW_OPTK_INT:
	case NW_OPTK_LONG:
		if (nw_parse_long(arg, o->min, o->max, &l, name, err, errlen))
			return -1;
		if (o->kind == NW_OPTK_LONG) {
			long long ll = l;
			memcpy(field(opts, o), &ll, sizeof(ll));
		} else {
			set_int_like(opts, o, l);
		}
		return 0;
	case NW_OPTK_DOUBLE:
		if (nw_parse_double(arg, o->dmin, o->dmax, &d, name, err, errlen))
			return -1;
		memcpy(field(opts, o), &d, sizeof(d));
		return 0;
	case NW_OPTK_PERCENT:
		if (nw_parse_percent(arg, &d, name, err, errlen))
			return -1;
		if (o->dmax > 0 && (d < o->dmin || d > o->dmax))
			return nw_seterr(err, errlen, "%s: '%s' is out of range: give a percentage from %g to %g", name, arg,
			                 o->dmin * 100, o->dmax * 100);
		memcpy(field(opts, o), &d, sizeof(d));
		return 0;
	case NW_OPTK_SIZE: {
		uint64_t v;
		if (nw_parse_size(arg, &v, e2, sizeof(e2)))
			return nw_seterr(err, errlen, "%s: %s", name, e2);
		memcpy(field(opts, o), &v, sizeof(v));
		return 0;
	}
	case NW_OPTK_DURATION:
		if (nw_parse_duration(arg, &d, e2, sizeof(e2)))
			return nw_seterr(err, errlen, "%s: %s", name, e2);
		if (o->dmax > 0 && (d < o->dmin || d > o->dmax))
			return nw_seterr(err, errlen, "%s: '%s' is out of range: give %g s to %g s", name, arg, o->dmin, o->dmax);
		memcpy(field(opts, o), &d, sizeof(d));
		return 0;
	case NW_OPTK_DIR: {
		struct stat st;
		if (!*arg)
			return nw_seterr(err, errlen, "option '%s' needs a value", name);
		if (o->flags & NW_OPTF_LATER) {
			memcpy(field(opts, o), &arg, sizeof(arg));
			return 0;
		}
		if (stat(arg, &st) != 0)
			return nw_seterr(err, errlen, "%s '%s': %s; give an existing directory", name, arg, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return nw_seterr(err, errlen, "%s '%s' is not a directory", name, arg);
		memcpy(field(opts, o), &arg, sizeof(arg));
		return 0;
	}
	case NW_OPTK_STRING:
	case NW_OPTK_FILE:
	case NW_OPTK_OUTPUT:
		if (!*arg && !(o->flags & NW_OPTF_EMPTY))
			return nw_seterr(err, errlen, "option '%s' needs a value", name);
		memcpy(field(opts, o), &arg, sizeof(arg));
		return 0;
	case NW_OPTK_OUTOPT: {
		struct nw_opt_out out = { 1, arg && *arg && strcmp(arg, "-") ? arg : NULL };
		if (arg && !*arg)
			return nw_seterr(err, errlen, "%s= needs a file name (or give %s alone for stdout)", name, name);
		memcpy(field(opts, o), &out, sizeof(out));
		return 0;
	}
	case NW_OPTK_CHOICE:
		return read_choice(opts, o, arg, name, err, errlen);
	case NW_OPTK_CALL:
		return o->call(opts, arg, name, err, errlen);
	case NW_OPTK_REFUSED:
		return nw_seterr(err, errlen, "%s %s", name, o->help);
	default:
		NW_BUG("option row '%s' of kind %d has no reader", name, (int)o->kind);
	}
}

/* Every row's default, read as a given value would be. */
static void apply_defaults(const struct nw_cmd_spec *spec, void *opts)
{
	char err[NW_ERRLEN];
	for (size_t i = 0; spec->opts[i].kind != NW_OPTK_END; i++) {
		const struct nw_opt *o = &spec->opts[i];
		if (o->def && read_value(opts, o, o->def, "default", err, sizeof(err)))
			NW_BUG("command '%s', option '%s': its default does not read: %s", spec->name,
			       o->lname ? o->lname : "?", err);
	}
}

/* getopt_long's tables from the rows: long options into lo (ended by a zero row), letters into so. */
static void getopt_tables(const struct nw_cmd_spec *spec, struct option *lo, char *so, size_t solen)
{
	size_t nl = 0, ns = 0;
	/* a command line after the options (run) is the command's own: stop at its first word */
	if (spec->args == NW_ARGS_COMMAND)
		so[ns++] = '+';
	so[ns++] = ':';
	for (size_t i = 0; spec->opts[i].kind != NW_OPTK_END; i++) {
		const struct nw_opt *o = &spec->opts[i];
		if (!is_option(o))
			continue;
		if (o->lname)
			lo[nl++] = (struct option){ o->lname, has_arg(o), NULL, LONG_VAL((int)i) };
		if (o->sname) {
			if (has_arg(o) == optional_argument || ns + 3 >= solen)
				NW_BUG("command '%s': option -%c cannot be a short option here", spec->name, o->sname);
			so[ns++] = o->sname;
			if (has_arg(o) == required_argument)
				so[ns++] = ':';
		}
	}
	lo[nl] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[nl + 1] = (struct option){ NULL, 0, NULL, 0 };
	so[ns] = '\0';
	if (!strchr(so, 'h') && ns + 1 < solen) {
		so[ns++] = 'h';
		so[ns] = '\0';
	}
}

/* The message for getopt's '?' or ':' on argv[optind - 1]; returns -1. */
static int getopt_error(const struct nw_cmd_spec *spec, int c, int argc, char **argv)
{
	const char *typed = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
	char name[64];
	if (!strncmp(typed, "--", 2) || optopt <= 0 || optopt >= 0x100)
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(typed, "="), typed);
	else
		snprintf(name, sizeof(name), "-%c", optopt);
	if (c == ':')
		return nw_opt_error(spec, "option '%s' needs a value", name);
	if (!strncmp(typed, "--", 2) && strchr(typed, '=')) {
		int r = find_long(spec, typed + 2, strcspn(typed + 2, "="));
		if (r >= 0 && has_arg(&spec->opts[r]) == no_argument)
			return nw_opt_error(spec, "option '%s' takes no value", name);
	}
	const char *names[NW_OPT_MAX];
	size_t n = 0;
	for (size_t i = 0; spec->opts[i].kind != NW_OPTK_END; i++)
		if (spec->opts[i].lname && is_option(&spec->opts[i]) && !(spec->opts[i].flags & NW_OPTF_HIDDEN))
			names[n++] = spec->opts[i].lname;
	const char *near = !strncmp(name, "--", 2) ? nw_cli_nearest(name + 2, names, n) : NULL;
	if (near)
		return nw_opt_error(spec, "unknown option '%s'; did you mean '--%s'?", name, near);
	return nw_opt_error(spec, "unknown option '%s'", name);
}

/* Rows given that exclude each other: -1 after saying which, else 0. */
static int check_exclusive(const struct nw_opt_res *res)
{
	const struct nw_cmd_spec *spec = res->spec;
	for (size_t i = 0; spec->opts[i].kind != NW_OPTK_END; i++) {
		if (!res->given[i] || !spec->opts[i].excl)
			continue;
		for (size_t j = i + 1; spec->opts[j].kind != NW_OPTK_END; j++) {
			if (!res->given[j] || spec->opts[j].excl != spec->opts[i].excl)
				continue;
			char a[48], b[48];
			return nw_opt_error(spec, "%s and %s exclude each other: give one",
			                    row_name(&spec->opts[i], res->given[i], a, sizeof(a)),
			                    row_name(&spec->opts[j], res->given[j], b, sizeof(b)));
		}
	}
	return 0;
}

/* The output files given (OUTPUT, OUTOPT with a FILE) must be writable before the work starts. */
static int check_outputs(const struct nw_opt_res *res, void *opts)
{
	const struct nw_cmd_spec *spec = res->spec;
	if (nw_cli_other_rank())
		return 0;
	for (size_t i = 0; spec->opts[i].kind != NW_OPTK_END; i++) {
		const struct nw_opt *o = &spec->opts[i];
		const char *path = NULL;
		if (!res->given[i])
			continue;
		if (o->kind == NW_OPTK_OUTPUT)
			memcpy(&path, field(opts, o), sizeof(path));
		else if (o->kind == NW_OPTK_OUTOPT)
			path = ((const struct nw_opt_out *)field(opts, o))->path;
		char name[48];
		if (path && nw_cli_check_output(spec->name, row_name(o, res->given[i], name, sizeof(name)), path))
			return -1;
	}
	return 0;
}

/*
 * The word after a bare --json/--csv is never its FILE. Where the command
 * takes operands, a name ending in .json/.csv that does not exist was
 * surely meant as the output: say how to write it before any work is done.
 */
static int check_word_after_outopt(const struct nw_opt_res *res, const char *word, const char *opt)
{
	if (!word || res->spec->args == NW_ARGS_NONE || res->spec->args == NW_ARGS_COMMAND)
		return 0;
	size_t n = strlen(word);
	struct stat st;
	if (n < 5 || (strcmp(word + n - 5, ".json") && strcmp(word + n - 4, ".csv")) || stat(word, &st) == 0)
		return 0;
	for (int i = 0; i < res->nargs; i++)
		if (res->args[i] == word)
			return nw_opt_error(res->spec, "'%s' is not a file to read; to write %s output to it, give %s=%s", word,
			                    opt + 2, opt, word);
	return 0;
}

int nw_opt_exit(const struct nw_cmd_spec *spec, enum nw_opt_status st)
{
	return st == NW_OPT_HELP ? 0 : nw_opt_usage_rc(spec);
}

enum nw_opt_status nw_opt_parse(const struct nw_cmd_spec *spec, void *opts, int argc, char **argv,
                                struct nw_opt_res *res)
{
	size_t n = nrows(spec);
	struct option lo[NW_OPT_MAX + 2]; /* the rows, --help, the end */
	char so[2 * NW_OPT_MAX + 4];
	memset(res, 0, sizeof(*res));
	res->spec = spec;
	if (!spec->opts)
		NW_BUG("command '%s' has no option table", spec->name);
	apply_defaults(spec, opts);
	getopt_tables(spec, lo, so, sizeof(so));
	opterr = 0;
	optind = 0; /* glibc: start over, also when a process parses twice */
	const char *after_out = NULL, *after_out_opt = NULL;
	int c, li;
	while (li = -1, (c = getopt_long(argc, argv, so, lo, &li)) != -1) {
		if (c == '?' || c == ':') {
			getopt_error(spec, c, argc, argv);
			return NW_OPT_BAD;
		}
		if (c == 'h') {
			nw_opt_help(spec, stdout);
			return NW_OPT_HELP;
		}
		int row = c >= LONG_VAL(0) ? c - LONG_VAL(0) : find_short(spec, c);
		if (row < 0 || (size_t)row >= n)
			NW_BUG("getopt returned %d, no row of '%s'", c, spec->name);
		const struct nw_opt *o = &spec->opts[row];
		res->given[row] = c >= LONG_VAL(0) ? 1 : 2;
		char name[96], err[NW_ERRLEN];
		typed_name(o, res->given[row], name, sizeof(name));
		if (read_value(opts, o, optarg, name, err, sizeof(err))) {
			nw_opt_error(spec, "%s", err);
			return NW_OPT_BAD;
		}
		if (o->kind == NW_OPTK_OUTOPT && !optarg && optind < argc && argv[optind][0] != '-') {
			after_out = argv[optind];
			after_out_opt = o->lname;
		}
	}
	res->nargs = argc - optind;
	res->args = argv + optind;
	if (check_exclusive(res) || check_outputs(res, opts))
		return NW_OPT_BAD;
	if (after_out) {
		char o[48];
		snprintf(o, sizeof(o), "--%s", after_out_opt);
		if (spec->args == NW_ARGS_NONE && res->nargs && res->args[0] == after_out) {
			nw_opt_error(spec, "unexpected argument '%s': %s takes its file only as %s=%s", after_out, o, o,
			             after_out);
			return NW_OPT_BAD;
		}
		if (check_word_after_outopt(res, after_out, o))
			return NW_OPT_BAD;
	}
	if (spec->args == NW_ARGS_NONE && nw_opt_no_operands(res))
		return NW_OPT_BAD;
	return NW_OPT_OK;
}

int nw_opt_no_operands(const struct nw_opt_res *res)
{
	if (!res->nargs)
		return 0;
	return nw_opt_error(res->spec, "unexpected argument '%s'", res->args[0]);
}

/* ---- help ---- */

/* "-b, --minbytes SIZE", "--op LIST", "--json[=FILE]" for row o into buf. */
static void left_column(const struct nw_opt *o, char *buf, size_t len)
{
	struct nw_strbuf sb;
	nw_strbuf_init(&sb);
	if (o->sname && o->lname)
		nw_strbuf_addf(&sb, "-%c, --%s", o->sname, o->lname);
	else if (o->sname)
		nw_strbuf_addf(&sb, "-%c", o->sname);
	else
		nw_strbuf_addf(&sb, "--%s", o->lname);
	int ha = has_arg(o);
	if (ha == optional_argument)
		nw_strbuf_addf(&sb, "[=%s]", o->argh ? o->argh : "FILE");
	else if (ha == required_argument)
		nw_strbuf_addf(&sb, " %s", o->argh ? o->argh : "VALUE");
	nw_strlcpy(buf, sb.buf, len);
	nw_strbuf_release(&sb);
}

/* Whether the row appears in help and completion. */
static int shown(const struct nw_opt *o)
{
	return is_option(o) && !(o->flags & NW_OPTF_HIDDEN) && o->kind != NW_OPTK_REFUSED;
}

/* The row's help lines, each after indent spaces but the first; "(default X)" added when not said. */
static void help_lines(const struct nw_opt *o, int indent, FILE *f)
{
	const char *h = o->help ? o->help : "";
	for (;;) {
		size_t n = strcspn(h, "\n");
		fprintf(f, "%.*s", (int)n, h);
		if (!h[n])
			break;
		h += n + 1;
		fprintf(f, "\n%*s", indent, "");
	}
	if (o->def && !strstr(o->help ? o->help : "", "default"))
		fprintf(f, " (default %s)", o->def);
	fputc('\n', f);
}

void nw_opt_help(const struct nw_cmd_spec *spec, FILE *f)
{
	int width = spec->width ? spec->width : 24;
	const char *syn = spec->synopsis ? spec->synopsis : "[options]";
	for (int first = 1;; first = 0) {
		size_t n = strcspn(syn, "\n");
		fprintf(f, "%s ncclwatch %s %.*s\n", first ? "usage:" : "      ", spec->name, (int)n, syn);
		if (!syn[n])
			break;
		syn += n + 1;
	}
	if (spec->about)
		fprintf(f, "\n%s", spec->about);
	fputc('\n', f);
	if (spec->opts[0].kind != NW_OPTK_GROUP)
		fprintf(f, "options:\n");
	for (size_t i = 0; spec->opts[i].kind != NW_OPTK_END; i++) {
		const struct nw_opt *o = &spec->opts[i];
		if (o->kind == NW_OPTK_GROUP) {
			fprintf(f, "%s\n", o->help);
			continue;
		}
		if (!shown(o))
			continue;
		char left[96];
		left_column(o, left, sizeof(left));
		if ((int)strlen(left) + 3 > width)
			fprintf(f, "  %s\n%*s", left, width, "");
		else
			fprintf(f, "  %-*s", width - 2, left);
		help_lines(o, width, f);
	}
	fprintf(f, "  %-*s%s\n", width - 2, "-h, --help", "this text");
	if (spec->footer)
		fprintf(f, "\n%s", spec->footer);
}

/* ---- man page ---- */

/* Text as roff: backslashes and dashes escaped, a leading '.' or '\'' made literal. */
static void roff(const char *s, size_t n, FILE *f)
{
	int bol = 1;
	for (size_t i = 0; i < n && s[i]; i++) {
		char c = s[i];
		if (bol && (c == '.' || c == '\''))
			fputs("\\&", f);
		if (c == '\\')
			fputs("\\e", f);
		else if (c == '-')
			fputs("\\-", f);
		else
			fputc(c, f);
		bol = c == '\n';
	}
}

static void roff_str(const char *s, FILE *f)
{
	roff(s, strlen(s), f);
}

/* A paragraph of help text as a no-fill block (its own line breaks are kept). */
static void roff_block(const char *s, FILE *f)
{
	fputs(".nf\n", f);
	roff_str(s, f);
	if (*s && s[strlen(s) - 1] != '\n')
		fputc('\n', f);
	fputs(".fi\n", f);
}

void nw_opt_man(const struct nw_cmd_spec *spec, const char *summary, const char *version, FILE *f)
{
	char upper[64];
	size_t i;
	for (i = 0; spec->name[i] && i + 1 < sizeof(upper) - 10; i++)
		upper[i] = (char)(spec->name[i] >= 'a' && spec->name[i] <= 'z' ? spec->name[i] - 32 : spec->name[i]);
	upper[i] = '\0';
	fprintf(f, ".TH NCCLWATCH\\-%s 1 \"\" \"ncclwatch %s\" \"ncclwatch manual\"\n", upper, version);
	fprintf(f, ".SH NAME\nncclwatch\\-%s \\- ", spec->name);
	roff_str(summary, f);
	fputs("\n.SH SYNOPSIS\n.nf\n", f);
	const char *syn = spec->synopsis ? spec->synopsis : "[options]";
	for (;;) {
		size_t n = strcspn(syn, "\n");
		fprintf(f, "\\fBncclwatch %s\\fR ", spec->name);
		roff(syn, n, f);
		fputc('\n', f);
		if (!syn[n])
			break;
		syn += n + 1;
	}
	fputs(".fi\n", f);
	if (spec->about) {
		fputs(".SH DESCRIPTION\n", f);
		roff_block(spec->about, f);
	}
	fputs(".SH OPTIONS\n", f);
	for (i = 0; spec->opts[i].kind != NW_OPTK_END; i++) {
		const struct nw_opt *o = &spec->opts[i];
		if (o->kind == NW_OPTK_GROUP) {
			fputs(".SS ", f);
			roff(o->help, strcspn(o->help, ":"), f);
			fputc('\n', f);
			continue;
		}
		if (!shown(o))
			continue;
		char left[96];
		left_column(o, left, sizeof(left));
		fputs(".TP\n\\fB", f);
		roff_str(left, f);
		fputs("\\fR\n", f);
		roff_str(o->help ? o->help : "", f);
		if (o->def && !strstr(o->help ? o->help : "", "default"))
			fprintf(f, " (default %s)", o->def);
		fputc('\n', f);
	}
	fputs(".TP\n\\fB\\-h, \\-\\-help\\fR\nthis text\n", f);
	if (spec->footer) {
		fputs(".SH NOTES\n", f);
		roff_block(spec->footer, f);
	}
	fputs(".SH SEE ALSO\n.BR ncclwatch (1)\n", f);
}

/* ---- completion ---- */

/* Prints word when it begins with prefix (and is not hidden by being empty). */
static void offer(const char *word, const char *prefix, FILE *f)
{
	if (word && *word && !strncmp(word, prefix, strlen(prefix)))
		fprintf(f, "%s\n", word);
}

/* Candidates for the value of row o, the word typed so far being cur; head is printed before each. */
static void complete_value(const struct nw_opt *o, const char *head, const char *cur, FILE *f)
{
	char buf[256];
	if (o->kind == NW_OPTK_FILE || o->kind == NW_OPTK_OUTPUT || o->kind == NW_OPTK_OUTOPT) {
		fprintf(f, "__files__\n");
		return;
	}
	if (o->kind == NW_OPTK_DIR) {
		fprintf(f, "__dirs__\n");
		return;
	}
	/* a comma list: complete the item after the last comma, keeping those before */
	const char *item = cur;
	char lhead[192];
	snprintf(lhead, sizeof(lhead), "%s", head);
	if (o->flags & NW_OPTF_LIST) {
		const char *comma = strrchr(cur, ',');
		if (comma) {
			snprintf(lhead, sizeof(lhead), "%s%.*s", head, (int)(comma + 1 - cur), cur);
			item = comma + 1;
		}
	}
	const char *const *vals = o->values ? o->values() : NULL;
	for (size_t i = 0; vals && vals[i]; i++) {
		snprintf(buf, sizeof(buf), "%s%s", lhead, vals[i]);
		if (!strncmp(vals[i], item, strlen(item)))
			fprintf(f, "%s\n", buf);
	}
	for (const struct nw_opt_choice *c = o->kind == NW_OPTK_CHOICE ? o->choices : NULL; c && c->name; c++) {
		snprintf(buf, sizeof(buf), "%s%s", lhead, c->name);
		if (!strncmp(c->name, item, strlen(item)))
			fprintf(f, "%s\n", buf);
	}
}

/* Every option's spelling that begins with cur. */
static void complete_option(const struct nw_cmd_spec *spec, const char *cur, FILE *f)
{
	char buf[64];
	for (size_t i = 0; spec->opts[i].kind != NW_OPTK_END; i++) {
		const struct nw_opt *o = &spec->opts[i];
		if (!shown(o))
			continue;
		if (o->lname) {
			snprintf(buf, sizeof(buf), "--%s", o->lname);
			offer(buf, cur, f);
		}
		if (o->sname && strlen(cur) <= 2) {
			snprintf(buf, sizeof(buf), "-%c", o->sname);
			offer(buf, cur, f);
		}
	}
	offer("--help", cur, f);
}

/* The operand's kind at position nops (sub-command words counted). */
static void complete_operand(const struct nw_cmd_spec *spec, int nops, char **ops, const char *cur, FILE *f)
{
	enum nw_opt_args args = spec->args;
	if (spec->subcmds) {
		if (nops == 0) {
			for (const struct nw_subcmd *s = spec->subcmds; s->name; s++)
				offer(s->name, cur, f);
			return;
		}
		args = NW_ARGS_NONE;
		for (const struct nw_subcmd *s = spec->subcmds; s->name; s++)
			if (!strcmp(s->name, ops[0]))
				args = s->args;
	}
	if (args == NW_ARGS_FILES || args == NW_ARGS_RUNS)
		fprintf(f, "__files__\n");
}

void nw_opt_complete(const struct nw_cmd_spec *spec, int n, char **words, FILE *f)
{
	if (n <= 0)
		return;
	const char *cur = words[n - 1];
	int want_value = -1, dashdash = 0, nops = 0;
	char *ops[8];
	for (int i = 0; i < n - 1; i++) {
		const char *w = words[i];
		if (want_value >= 0) {
			want_value = -1;
		} else if (dashdash || w[0] != '-' || !w[1]) {
			if (nops < (int)NW_ARRAY_LEN(ops))
				ops[nops++] = words[i];
		} else if (!strcmp(w, "--")) {
			dashdash = 1;
		} else if (w[1] == '-') {
			int r = find_long(spec, w + 2, strcspn(w + 2, "="));
			if (r >= 0 && !strchr(w, '=') && has_arg(&spec->opts[r]) == required_argument)
				want_value = r;
		} else {
			for (const char *p = w + 1; *p; p++) {
				int r = find_short(spec, *p);
				if (r >= 0 && has_arg(&spec->opts[r]) == required_argument) {
					if (!p[1])
						want_value = r;
					break;
				}
			}
		}
	}
	if (want_value >= 0) {
		complete_value(&spec->opts[want_value], "", cur, f);
	} else if (!dashdash && !strncmp(cur, "--", 2) && strchr(cur, '=')) {
		size_t len = strcspn(cur + 2, "=");
		int r = find_long(spec, cur + 2, len);
		char head[80];
		snprintf(head, sizeof(head), "%.*s", (int)(len + 3), cur);
		if (r >= 0)
			complete_value(&spec->opts[r], head, cur + len + 3, f);
	} else if (!dashdash && cur[0] == '-') {
		complete_option(spec, cur, f);
	} else if (spec->args == NW_ARGS_COMMAND && dashdash) {
		fprintf(f, "__commands__\n");
	} else {
		complete_operand(spec, nops, ops, cur, f);
	}
}

static const char *const kind_names[] = {
	[NW_OPTK_END] = "end", [NW_OPTK_GROUP] = "group", [NW_OPTK_FLAG] = "flag", [NW_OPTK_INT] = "int",
	[NW_OPTK_LONG] = "long", [NW_OPTK_DOUBLE] = "double", [NW_OPTK_PERCENT] = "percent", [NW_OPTK_SIZE] = "size",
	[NW_OPTK_DURATION] = "duration", [NW_OPTK_STRING] = "string", [NW_OPTK_FILE] = "file", [NW_OPTK_DIR] = "dir",
	[NW_OPTK_OUTPUT] = "output", [NW_OPTK_OUTOPT] = "outopt", [NW_OPTK_CHOICE] = "choice", [NW_OPTK_CALL] = "call",
	[NW_OPTK_REFUSED] = "refused",
};

void nw_opt_list(const struct nw_cmd_spec *spec, FILE *f)
{
	static const char *const arg_names[] = { "none", "required", "optional" };
	for (size_t i = 0; spec->opts[i].kind != NW_OPTK_END; i++) {
		const struct nw_opt *o = &spec->opts[i];
		if (!is_option(o))
			continue;
		fprintf(f, "%s\t%s\t%s\t%s\t%s\t%s\n", o->sname ? (char[]){ '-', o->sname, 0 } : "-",
		        o->lname ? o->lname : "-", kind_names[o->kind], o->argh ? o->argh : "-", arg_names[has_arg(o)],
		        shown(o) ? "shown" : "hidden");
	}
}
