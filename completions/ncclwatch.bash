# SPDX-License-Identifier: Apache-2.0
# bash completion for ncclwatch. The candidates come from the program itself
# (`ncclwatch __complete WORDS...`, made from each command's option table),
# so they are always those of the installed version: commands, sub-commands,
# long and short options, the values of options such as --op, -d and -o
# (after each comma of a list too), and file names only where a file goes.
_ncclwatch()
{
	local cur=${COMP_WORDS[COMP_CWORD]} line words=() prefix='' c out
	# the words as the user typed them: bash splits "--op=al" at '=', we do not
	line=${COMP_LINE:0:COMP_POINT}
	read -r -a words <<<"$line"
	[[ $line == *[[:space:]] || ${#words[@]} -eq 0 ]] && words+=('')
	c=${words[${#words[@]}-1]}
	# what bash will replace is the part after the last '=' (a COMP_WORDBREAKS character)
	if [[ $c == *=* && $COMP_WORDBREAKS == *=* ]]; then
		prefix=${c%=*}=
	fi
	[[ $cur == = ]] && cur=''
	out=$("${words[0]}" __complete "${words[@]:1}" 2>/dev/null) || return
	case $out in
	__files__)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "${c#"$prefix"}"))
		;;
	__dirs__)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -d -- "${c#"$prefix"}"))
		;;
	__commands__)
		COMPREPLY=($(compgen -c -- "$cur"))
		;;
	*)
		local IFS=$'\n'
		COMPREPLY=($out)
		[ -n "$prefix" ] && COMPREPLY=("${COMPREPLY[@]#"$prefix"}")
		# a comma list goes on: no space after "all_reduce,"
		[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *, ]] && compopt -o nospace 2>/dev/null
		;;
	esac
}
complete -F _ncclwatch ncclwatch
