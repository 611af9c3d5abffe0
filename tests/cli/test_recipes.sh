#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# docs/hacking.md's "How to add ..." recipes, followed in a copy of the
# tree: each recipe_X makes the change its recipe describes, in the files the
# recipe names, then the copy is built once and each check_X looks for the
# result in the new binary. When the code moves away from a recipe (a table
# or a file renamed, a step missing), the edit, the build or the check fails.
# Another recipe: a recipe_X and a check_X, and X in RECIPES.
. "$(dirname "$0")/lib.sh"
DOC=$SRCDIR/docs/hacking.md
W=$TMP/tree
RECIPES=(command doctor_check logscan_rule)

# recipe_text TITLE: the recipe "**TITLE**" of docs/hacking.md, to the next one.
recipe_text() { awk -v t="**$1**" 'index($0, t) == 1 {on = 1; print; next} on && /^(\*\*|## )/ {exit} on' "$DOC"; }
# recipe_names TITLE NAME...: the recipe names each file (by path or by name).
recipe_names() {
	local t=$1 f
	shift
	recipe_text "$t" >"$TMP/recipe"
	expect_true "docs/hacking.md has the recipe '$t'" test -s "$TMP/recipe"
	for f; do
		expect_true "recipe '$t' names $f" grep -qF "$(basename "$f")" "$TMP/recipe"
	done
}
# put FILE FROM AT TEXT: TEXT inserted before the first line matching the
# regex AT, at or after the first line matching FROM; a check that it was.
put() {
	local f=$W/$1
	cp "$f" "$TMP/before"
	# (through the environment: awk -v would read backslashes as escapes)
	PUT_FROM=$2 PUT_AT=$3 PUT_TEXT=$4 awk '
		!done && $0 ~ ENVIRON["PUT_FROM"] {seen = 1}
		!done && seen && $0 ~ ENVIRON["PUT_AT"] {print ENVIRON["PUT_TEXT"]; done = 1}
		{print}' "$TMP/before" >"$f"
	expect_true "recipe edit: $1 has /$3/ after /$2/" sh -c "! cmp -s '$TMP/before' '$f'"
}

# A command: its file with an option table and a spec, one row in NW_COMMANDS.
recipe_command() {
	recipe_names "A command" src/cmd/cmd.h test_shared_flags.sh docs-options
	expect_true "recipe 'A command' names nw_opt_parse and the spec" \
		sh -c 'grep -q nw_opt_parse "$1" && grep -q nw_cmd_spec "$1"' sh "$TMP/recipe"
	cat >"$W/src/cmd/recipedemo.c" <<'EOF'
/* recipedemo: a command added as docs/hacking.md says. */
#include <stdio.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"

struct recipedemo_opts {
	int times;
	struct nw_opt_out json;
};

static const struct nw_opt recipedemo_options[] = {
	{ .kind = NW_OPTK_INT, .sname = 'n', .lname = "times", .off = NW_F_INT(struct recipedemo_opts, times),
	  .argh = "N", .min = 1, .max = 9, .def = "1", .help = "say it N times" },
	NW_OPT_JSON(struct recipedemo_opts, json, ""),
	{ 0 },
};

const struct nw_cmd_spec nw_spec_recipedemo = {
	.name = "recipedemo",
	.about = "A command added as docs/hacking.md says.\n",
	.opts = recipedemo_options,
};

int cmd_recipedemo(int argc, char **argv)
{
	struct recipedemo_opts o = { 0 };
	struct nw_opt_res res;
	enum nw_opt_status st = nw_opt_parse(&nw_spec_recipedemo, &o, argc, argv, &res);
	if (st != NW_OPT_OK)
		return nw_opt_exit(&nw_spec_recipedemo, st);
	for (int i = 0; i < o.times; i++)
		printf("recipe demo\n");
	return 0;
}
EOF
	put src/cmd/cmd.h '^#define NW_COMMANDS' 'X\(version,' '	X(recipedemo, "a command added as docs/hacking.md says") \'
}
check_command() {
	run "$W/build/ncclwatch" recipedemo -n 2
	expect_rc "new command: runs" 0
	[ "$(grep -c '^recipe demo$' "$OUT")" = 2 ]; RC=$?; expect_rc "new command: its option read (-n 2)" 0
	run "$W/build/ncclwatch" --help
	expect_out "new command: in the command list" '^  recipedemo +a command added'
	run "$W/build/ncclwatch" help recipedemo
	expect_out "new command: its help from the table" '^  -n, --times N +say it N times \(default 1\)$'
	run "$W/build/ncclwatch" recipedemo --times 10
	expect_rc "new command: its range checked (exit 2)" 2
	run "$W/build/ncclwatch" __complete recipedemo --t
	expect_out "new command: completion offers its option" '^--times$'
	run "$W/build/ncclwatch" help --man recipedemo
	expect_out "new command: a man page" '^\.TH NCCLWATCH\\-RECIPEDEMO 1'
}

# A doctor check: a function in its group's file, its prototype, a row in the table.
recipe_doctor_check() {
	recipe_names "A doctor check" doctor_env.c src/probe/doctor_checks.h src/probe/doctor_checks.c \
		tests/unit/test_doctor_checks.c docs/doctor.md
	cat >>"$W/src/probe/doctor_env.c" <<'EOF'

void nw_doc_chk_recipe_demo(const struct nw_doc_ctx *c, struct nw_findings *out)
{
	const char *v = nw_doc_getenv(c->env, "NW_RECIPE_DEMO");
	if (v)
		ADD(out, "env.recipe_demo", NW_SEV_WARN, "a check added as docs/hacking.md says",
		    "unset NW_RECIPE_DEMO", "NW_RECIPE_DEMO=%s", v);
	else
		ADD(out, "env.recipe_demo", NW_SEV_OK, NULL, NULL, "NW_RECIPE_DEMO is not set");
}
EOF
	put src/probe/doctor_checks.h '^/\* doctor_env\.c' '^$' \
		'void nw_doc_chk_recipe_demo(const struct nw_doc_ctx *c, struct nw_findings *out);'
	put src/probe/doctor_checks.c 'struct nw_doc_check [a-z_]+\[\] = \{' '^};' \
		'	{ "env.recipe_demo", "a check added as docs/hacking.md says", nw_doc_chk_recipe_demo },'
}
check_doctor_check() {
	local nogpu=(--sysroot "$SRCDIR/tests/fixtures/sysfs/nogpu-vm") before
	run env -u NW_RECIPE_DEMO "$W/build/ncclwatch" doctor --only env.recipe_demo "${nogpu[@]}"
	expect_rc "new doctor check, healthy: exit 0" 0
	expect_out "new doctor check, healthy: listed" '^ok +env\.recipe_demo +NW_RECIPE_DEMO is not set$'
	run env NW_RECIPE_DEMO=1 "$W/build/ncclwatch" doctor --only env "${nogpu[@]}" --json
	expect_true "new doctor check, broken: a warning, in its group" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = [x for x in d["findings"] if x["id"] == "env.recipe_demo"]
assert [x["severity"] for x in f] == ["warn"] and f[0]["seen"] == "NW_RECIPE_DEMO=1", f' "$OUT"
	before=$("$NW" doctor "${nogpu[@]}" 2>/dev/null | sed -n 's/^ncclwatch doctor: \([0-9]*\) checks.*/\1/p')
	run "$W/build/ncclwatch" doctor "${nogpu[@]}"
	expect_out "new doctor check: counted with the others ($before + 1)" "^ncclwatch doctor: $((before + 1)) checks"
}

# A logscan rule: a function and a row in rules[], over a fact the analyser keeps (NCCL_* set by the environment).
recipe_logscan_rule() {
	recipe_names "A logscan rule" src/parse/ncclog_rules.c tests/unit/test_parse_ncclog.c docs/logscan.md
	expect_true "recipe 'A logscan rule' names its table" grep -qF 'rules[]' "$TMP/recipe"
	put src/parse/ncclog_rules.c '^struct rule \{' '^struct rule \{' 'static int r_recipe_demo(const struct rule_ctx *x, char *msg, size_t len)
{
	const struct lg_env *e = ev_env(x, "NCCL_RECIPE_DEMO");
	if (!e)
		return 0;
	snprintf(msg, len, "NCCL_RECIPE_DEMO is set");
	return 1;
}
'
	put src/parse/ncclog_rules.c 'struct rule rules\[\] = \{' '^};' \
		'	{ { "recipe-demo", NW_LOG_WARNING, "NCCL_RECIPE_DEMO set", "unset NCCL_RECIPE_DEMO", "forced_setting" }, r_recipe_demo },'
}
check_logscan_rule() {
	local log=$SRCDIR/tests/fixtures/logs/h200x2_allreduce_info.log
	run "$W/build/ncclwatch" logscan --list-diagnoses
	expect_out "new logscan rule: listed" $'^recipe-demo\twarning\t'
	{ cat "$log"; echo "vm:3285:3285 [0] NCCL INFO NCCL_RECIPE_DEMO set by environment to 1"; } >"$TMP/demo.log"
	run "$W/build/ncclwatch" logscan --json - <"$TMP/demo.log"
	expect_true "new logscan rule: fires on a log that sets the variable" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [x["cause"] for x in d["diagnoses"] if x["id"] == "recipe-demo"] == ["forced_setting"], d["diagnoses"]' "$OUT"
	run "$W/build/ncclwatch" logscan "$log"
	expect_no_out "new logscan rule: silent on a log that does not" 'recipe-demo'
}

# Every file docs/hacking.md names exists (placeholders "foo" and paths outside the tree aside).
exists_in_tree() {
	case $1 in
	*/*) [ -e "$SRCDIR/$1" ] || [ -e "$SRCDIR/src/$1" ] ;;
	*) [ -n "$(find "$SRCDIR/src" "$SRCDIR/tests" "$SRCDIR/docs" -name "$1" -print -quit)" ] ;;
	esac
}
grep -o '`[^` .][^` ]*\.\(c\|h\|md\|sh\|py\)`' "$DOC" | tr -d '`' | sort -u | grep -v 'foo' >"$TMP/named"
while read -r f; do
	expect_true "docs/hacking.md names $f, which exists" exists_in_tree "$f"
done <"$TMP/named"

mkdir -p "$W"
cp -R "$SRCDIR/Makefile" "$SRCDIR/VERSION" "$SRCDIR/src" "$SRCDIR/docs" "$W/"
for r in "${RECIPES[@]}"; do "recipe_$r"; done
# -O0 and no sanitizer: this build only has to show that the recipes hold
run env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS CFLAGS=-O0 make -C "$W" -j2 BUILD=build SANITIZE=0 build/ncclwatch
expect_rc "the tree with every recipe followed builds (warnings are errors)" 0
if [ "$RC" -ne 0 ]; then
	grep -E 'error|warning' "$OUT" "$ERR" | head -20 | sed 's/^/#   /'
	exit 1
fi
for r in "${RECIPES[@]}"; do "check_$r"; done
