#!/bin/bash

__instantctl_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__instantctl_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__instantctl_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__instantctl_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_instantctl() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __instantctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    ls|du|prune|rm|verify|quarantine|download|sync|annotations|cache|metrics|demo|help)
        # Offer subcommand argument completions
        "_instantctl_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'ls du prune rm verify quarantine download sync annotations cache metrics demo help' -- "${cur}"))
        ;;
    esac
}

_instantctl_ls() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --dirty --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --tenant --document)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--tenant')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion ls -- --tenant "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--document')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion ls -- --document "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_instantctl_du() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --by)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--by')
        __instantctl_add_completions -W 'tenant'$'\n''document'
        return
        ;;
    esac
}

_instantctl_prune() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --dry-run --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --max-size --older-than --tenant)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--max-size')
        __instantctl_add_completions -W '1GB'$'\n''10GB'$'\n''500MiB'
        return
        ;;
    '--older-than')
        __instantctl_add_completions -W '7d'$'\n''30d'$'\n''12h'
        return
        ;;
    '--tenant')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion prune -- --tenant "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_instantctl_rm() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --all --force --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --tenant --document --layer --export)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--tenant')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion rm -- --tenant "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--document')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion rm -- --document "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--layer')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion rm -- --layer "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--export')
        __instantctl_add_completions -o plusdirs -fX '!*.@(json)'
        return
        ;;
    esac
}

_instantctl_verify() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --deep --repair --rebuild-catalog --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --sample)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--sample')
        return
        ;;
    esac
}

_instantctl_quarantine() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __instantctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list|restore|export)
        # Offer subcommand argument completions
        "_instantctl_quarantine_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list restore export' -- "${cur}"))
        ;;
    esac
}

_instantctl_quarantine_list() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    esac
}

_instantctl_quarantine_restore() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root)
    __instantctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion quarantine restore -- positional@0 "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_instantctl_quarantine_export() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --to)
    __instantctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--to')
        __instantctl_add_completions -o plusdirs -fX '!*.@(json)'
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion quarantine export -- positional@0 "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_instantctl_download() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --server --jwt --jwt-file --timeout)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--server')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion download -- --server "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--jwt')
        return
        ;;
    '--jwt-file')
        return
        ;;
    '--timeout')
        return
        ;;
    esac
}

_instantctl_sync() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --watch --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --server --jwt --jwt-file --timeout)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--server')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion sync -- --server "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--jwt')
        return
        ;;
    '--jwt-file')
        return
        ;;
    '--timeout')
        return
        ;;
    esac
}

_instantctl_annotations() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __instantctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list|show|add|update|delete|export|import)
        # Offer subcommand argument completions
        "_instantctl_annotations_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list show add update delete export import' -- "${cur}"))
        ;;
    esac
}

_instantctl_annotations_list() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --pending --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --document --layer --server)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--document')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations list -- --document "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--layer')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations list -- --layer "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--server')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations list -- --server "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_instantctl_annotations_show() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --document --layer --server)
    __instantctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--document')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations show -- --document "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--layer')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations show -- --layer "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--server')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations show -- --server "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_instantctl_annotations_add() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --document --layer --server --file)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--document')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations add -- --document "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--layer')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations add -- --layer "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--server')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations add -- --server "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--file')
        __instantctl_add_completions -f
        return
        ;;
    esac
}

_instantctl_annotations_update() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --document --layer --server --file)
    __instantctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--document')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations update -- --document "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--layer')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations update -- --layer "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--server')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations update -- --server "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--file')
        __instantctl_add_completions -f
        return
        ;;
    esac
}

_instantctl_annotations_delete() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --document --layer --server)
    __instantctl_offer_flags_options -1

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--document')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations delete -- --document "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--layer')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations delete -- --layer "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--server')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations delete -- --server "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_instantctl_annotations_export() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --document --layer --server --output)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--document')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations export -- --document "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--layer')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations export -- --layer "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--server')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations export -- --server "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--output')
        __instantctl_add_completions -f
        return
        ;;
    esac
}

_instantctl_annotations_import() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --document --layer --server --file)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--document')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations import -- --document "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--layer')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations import -- --layer "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--server')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion annotations import -- --server "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    '--file')
        __instantctl_add_completions -f
        return
        ;;
    esac
}

_instantctl_cache() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --problems --version -h --help)
    repeating_options=()
    non_repeating_options=(--root --tenant)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '--tenant')
        __instantctl_add_completions -W "$(__instantctl_custom_complete ---completion cache -- --tenant "${COMP_CWORD}" "$(__instantctl_cursor_index_in_current_word)")"
        return
        ;;
    esac
}

_instantctl_metrics() {
    repeating_flags=()
    non_repeating_flags=(--json -q --quiet --version -h --help)
    repeating_options=()
    non_repeating_options=(--root -o --output)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--root')
        __instantctl_add_completions -d
        return
        ;;
    '-o'|'--output')
        __instantctl_add_completions -o plusdirs -fX '!*.@(prom)'
        return
        ;;
    esac
}

_instantctl_demo() {
    repeating_flags=()
    non_repeating_flags=(--keep --version -h --help)
    repeating_options=()
    non_repeating_options=(--pdfs)
    __instantctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--pdfs')
        __instantctl_add_completions -d
        return
        ;;
    esac
}

_instantctl_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __instantctl_offer_flags_options -1
}

complete -o filenames -F _instantctl instantctl
