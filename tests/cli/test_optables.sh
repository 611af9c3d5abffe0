#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One option table per command (src/cmd/opt.h) and everything made from it:
# every option of every command is in `help CMD`, in the command's docs page
# (scripts/docs-options keeps the block there equal to the help) and in
# what bash completion offers; completion also gives whole names, values of
# enum options, sub-commands and files only where a file goes.
source "$(dirname "$0")/lib.sh"
cd "$SRCDIR" || exit 1
mkdir -p "$TMP/bin"
ln -s "$NW" "$TMP/bin/ncclwatch"
export PATH=$TMP/bin:$PATH

run scripts/docs-options "$NW" --check
expect_rc "every docs page holds its command's current help (scripts/docs-options)" 0

# comp LINE: what bash completion offers for LINE (the cursor at its end), one per line.
# COMP_WORDS are split as bash splits them (also at '='), COMP_LINE is the line as typed.
comp() {
	bash -c '
		source "$1"
		COMP_LINE=$2; COMP_POINT=${#COMP_LINE}
		read -r -a w <<<"$COMP_LINE"
		[[ $COMP_LINE == *" " ]] && w+=("")
		COMP_WORDS=()
		for x in "${w[@]}"; do
			if [[ $x == --*=* ]]; then COMP_WORDS+=("${x%%=*}" "=" "${x#*=}"); else COMP_WORDS+=("$x"); fi
		done
		[[ ${COMP_WORDS[${#COMP_WORDS[@]}-1]} == "" && ${COMP_WORDS[${#COMP_WORDS[@]}-2]} == "=" ]] && unset "COMP_WORDS[${#COMP_WORDS[@]}-1]"
		COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
		_ncclwatch
		[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' _ completions/ncclwatch.bash "$1" 2>/dev/null
}

cmds=$("$NW" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]\+\) .*/\1/p' | grep -vx help)
for c in $cmds; do
	"$NW" help "$c" >"$TMP/help.$c"
	comp "ncclwatch $c --" >"$TMP/comp.$c"
	comp "ncclwatch $c -" >"$TMP/comp1.$c"
	page=docs/$c.md
	case $c in compare) page=docs/history.md ;; exporter) page=docs/metrics.md ;; version) page=docs/install.md ;; esac
	missing_help= missing_doc= missing_comp=
	while IFS=$'\t' read -r short long kind argh takes shown; do
		[ "$shown" = shown ] || continue
		name=--$long
		[ "$long" = - ] && name=$short
		grep -q -- "$name\b" "$TMP/help.$c" || missing_help+=" $name"
		grep -q -- "$name\b" "$page" || missing_doc+=" $name"
		if [ "$long" != - ]; then
			grep -qx -- "--$long" "$TMP/comp.$c" || missing_comp+=" --$long"
		fi
		if [ "$short" != - ]; then
			grep -qx -- "$short" "$TMP/comp1.$c" || missing_comp+=" $short"
		fi
	done < <("$NW" help --options "$c")
	expect_true "$c: help lists every option${missing_help:+ (missing:$missing_help)}" [ -z "$missing_help" ]
	expect_true "$c: $page names every option${missing_doc:+ (missing:$missing_doc)}" [ -z "$missing_doc" ]
	expect_true "$c: completion offers every option${missing_comp:+ (missing:$missing_comp)}" [ -z "$missing_comp" ]
done

# whole names, with '_' in them
comp "ncclwatch bench --wa" >"$TMP/c"
expect_true "bench --wa<TAB>: --warmup_iters, whole" grep -qx -- --warmup_iters "$TMP/c"
comp "ncclwatch bench --ag" >"$TMP/c"
expect_true "bench --ag<TAB>: --agg_iters, whole" grep -qx -- --agg_iters "$TMP/c"
comp "ncclwatch bench --op " >"$TMP/c"
expect_true "bench --op <TAB>: the ops" grep -qx all_reduce "$TMP/c"
expect_true "bench --op <TAB>: alltoall too" grep -qx alltoall "$TMP/c"
expect_true "bench --op <TAB>: no file names" bash -c '! grep -q "\.sh$\|Makefile" "$1"' _ "$TMP/c"
comp "ncclwatch bench --op=all_g" >"$TMP/c"
expect_true "bench --op=all_g<TAB>: the value alone (bash replaces after '=')" grep -qx all_gather "$TMP/c"
comp "ncclwatch bench --op all_reduce,bro" >"$TMP/c"
expect_true "bench --op LIST,<TAB>: after the comma" grep -qx all_reduce,broadcast "$TMP/c"
comp "ncclwatch bench -d bf" >"$TMP/c"
expect_true "bench -d bf<TAB>: bfloat16" grep -qx bfloat16 "$TMP/c"
comp "ncclwatch bench -o " >"$TMP/c"
expect_true "bench -o <TAB>: the reductions" grep -qx avg "$TMP/c"
comp "ncclwatch history " >"$TMP/c"
for s in list show export delete baseline sync merge; do
	expect_true "history <TAB>: $s" grep -qx "$s" "$TMP/c"
done
comp "ncclwatch hi" >"$TMP/c"
expect_true "hi<TAB>: history" grep -qx history "$TMP/c"
comp "ncclwatch help ex" >"$TMP/c"
expect_true "help ex<TAB>: exporter" grep -qx exporter "$TMP/c"
comp "ncclwatch top --sort " >"$TMP/c"
expect_true "top --sort <TAB>: the keys" grep -qx busbw "$TMP/c"
# files only where a file goes
comp "ncclwatch import Makef" >"$TMP/c"
expect_true "import <TAB>: files" grep -qx Makefile "$TMP/c"
comp "ncclwatch bench Makef" >"$TMP/c"
expect_true "bench <TAB> (no operands): no files" [ ! -s "$TMP/c" ]
comp "ncclwatch bench --json=Makef" >"$TMP/c"
expect_true "bench --json=<TAB>: files" grep -qx Makefile "$TMP/c"
comp "ncclwatch doctor --sysroot tes" >"$TMP/c"
expect_true "doctor --sysroot <TAB>: directories" grep -qx tests "$TMP/c"

# the man page comes from the same table
run "$NW" help --man bench
expect_out "help --man bench: an OPTIONS section" '^\.SH OPTIONS$'
expect_out "help --man bench: one entry per option" '^\\fB\\-w, \\-\\-warmup_iters N\\fR$'
run "$NW" help --man
expect_out "help --man: the top page lists the commands" '^\\fBexporter\\fR$'
