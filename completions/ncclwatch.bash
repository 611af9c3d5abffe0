# bash completion for ncclwatch. Commands and options are read from the
# program's own help (ncclwatch --help, ncclwatch help CMD), so they are
# always those of the installed version.
_ncclwatch()
{
	local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]:-}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$(ncclwatch --help 2>/dev/null |
			sed -n '/^commands:/,/^$/s/^  \([a-z]\+\) .*/\1/p')" -- "$cur"))
		return
	fi
	if [ "$cmd" = help ] && [ "$COMP_CWORD" -eq 2 ]; then
		COMPREPLY=($(compgen -W "$(ncclwatch --help 2>/dev/null |
			sed -n '/^commands:/,/^$/s/^  \([a-z]\+\) .*/\1/p')" -- "$cur"))
		return
	fi
	case $cur in
	-*)
		COMPREPLY=($(compgen -W "$(ncclwatch help "$cmd" 2>/dev/null |
			grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u)" -- "$cur"))
		;;
	*)
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	esac
}
complete -o filenames -F _ncclwatch ncclwatch
