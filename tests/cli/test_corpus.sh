# SPDX-License-Identifier: Apache-2.0
# The public corpus (tests/fixtures/corpus): every row of scripts/corpus-score
# pinned in agreed.txt must still agree with what the expert concluded.
. tests/cli/lib.sh
CORPUS=$SRCDIR/tests/fixtures/corpus

if ! command -v python3 >/dev/null; then
	skip "corpus scoreboard" "python3 not installed"
	exit 0
fi
run python3 "$SRCDIR/scripts/corpus-score" --nw "$NW" --corpus "$CORPUS" --check "$CORPUS/agreed.txt"
expect_rc "corpus: no pinned row regressed" 0
expect_out "corpus: the scoreboard prints its figures" '^cause +[0-9]+/'
