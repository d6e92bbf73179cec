function __instantctl_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __instantctl_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __instantctl_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __instantctl_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __instantctl_parse_tokens -S
    set -l unparsed_tokens (__instantctl_tokens -pc)
    switch $unparsed_tokens[1]
    case 'instantctl'
        __instantctl_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'ls'
            __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'tenant=' 'document=' 'dirty' 'version' 'h/help'
        case 'du'
            __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'by=' 'version' 'h/help'
        case 'prune'
            __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'dry-run' 'max-size=' 'older-than=' 'tenant=' 'version' 'h/help'
        case 'rm'
            __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'tenant=' 'document=' 'layer=' 'all' 'force' 'export=' 'version' 'h/help'
        case 'verify'
            __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'deep' 'sample=' 'repair' 'rebuild-catalog' 'version' 'h/help'
        case 'quarantine'
            __instantctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'version' 'h/help'
            case 'restore'
                __instantctl_parse_subcommand 1 'root=' 'json' 'q/quiet' 'version' 'h/help'
            case 'export'
                __instantctl_parse_subcommand 1 'root=' 'json' 'q/quiet' 'to=' 'version' 'h/help'
            end
        case 'download'
            __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'server=' 'jwt=' 'jwt-file=' 'timeout=' 'version' 'h/help'
        case 'sync'
            __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'server=' 'jwt=' 'jwt-file=' 'timeout=' 'watch' 'version' 'h/help'
        case 'annotations'
            __instantctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'document=' 'layer=' 'server=' 'pending' 'version' 'h/help'
            case 'show'
                __instantctl_parse_subcommand 1 'root=' 'json' 'q/quiet' 'document=' 'layer=' 'server=' 'version' 'h/help'
            case 'add'
                __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'document=' 'layer=' 'server=' 'file=' 'version' 'h/help'
            case 'update'
                __instantctl_parse_subcommand 1 'root=' 'json' 'q/quiet' 'document=' 'layer=' 'server=' 'file=' 'version' 'h/help'
            case 'delete'
                __instantctl_parse_subcommand -r 1 'root=' 'json' 'q/quiet' 'document=' 'layer=' 'server=' 'version' 'h/help'
            case 'export'
                __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'document=' 'layer=' 'server=' 'output=' 'version' 'h/help'
            case 'import'
                __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'document=' 'layer=' 'server=' 'file=' 'version' 'h/help'
            end
        case 'cache'
            __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'tenant=' 'problems' 'version' 'h/help'
        case 'metrics'
            __instantctl_parse_subcommand 0 'root=' 'json' 'q/quiet' 'o/output=' 'version' 'h/help'
        case 'demo'
            __instantctl_parse_subcommand 0 'keep' 'pdfs=' 'version' 'h/help'
        case 'help'
            __instantctl_parse_subcommand -r 1 'version'
        end
    end
end

function __instantctl_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __instantctl_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __instantctl_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __instantctl_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__instantctl_tokens -p)
    if test -z "$(__instantctl_tokens -t)"
        set -l index (count (__instantctl_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'instantctl' -f
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'ls' -d 'List the layers stored on this machine.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'du' -d 'Show where the store\'s bytes go.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'prune' -d 'Free space: unreferenced entries, then old or least-recently-used layers.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'rm' -d 'Remove a layer, a document, or everything of a server.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'verify' -d 'Check the store\'s integrity, and repair it.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'quarantine' -d 'List, restore or export what repair set aside.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'download' -d 'Download a document\'s PDF and the JWT\'s layer into the store.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'sync' -d 'Sync the JWT\'s layer: send its local changes, receive the server\'s (once, or until stopped).'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'annotations' -d 'List, show, add, update, delete, export or import a local layer\'s annotations (offline).'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'cache' -d 'List the cache entries: one per stored document, as listCacheEntries() sees them.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'metrics' -d 'Write the store\'s figures in Prometheus\'s text format.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'demo' -d 'The whole product on loopback: a server, clients downloading and syncing, the admin commands.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl ls" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl ls" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl ls" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl ls" tenant' -l 'tenant' -d 'Only this server\'s layers.' -rfka '(__instantctl_custom_completion ---completion ls -- --tenant (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl ls" document' -l 'document' -d 'Only this document\'s layers.' -rfka '(__instantctl_custom_completion ---completion ls -- --document (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl ls" dirty' -l 'dirty' -d 'Only layers with changes not yet synced.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl ls" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl ls" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl du" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl du" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl du" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl du" by' -l 'by' -d 'Group by tenant or document.' -rfka 'tenant document'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl du" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl du" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl prune" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl prune" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl prune" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl prune" dry-run' -l 'dry-run' -d 'Show what would be removed; change nothing.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl prune" max-size' -l 'max-size' -d 'Shrink the store to at most this size, such as 10GB or 500MiB.' -rfka '1GB 10GB 500MiB'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl prune" older-than' -l 'older-than' -d 'Remove layers not used for this long, such as 30d or 12h.' -rfka '7d 30d 12h'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl prune" tenant' -l 'tenant' -d 'Only this server\'s layers and documents.' -rfka '(__instantctl_custom_completion ---completion prune -- --tenant (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl prune" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl prune" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" tenant' -l 'tenant' -d 'The server the document belongs to.' -rfka '(__instantctl_custom_completion ---completion rm -- --tenant (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" document' -l 'document' -d 'The document to remove (or whose layer to remove).' -rfka '(__instantctl_custom_completion ---completion rm -- --document (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" layer' -l 'layer' -d 'The layer to remove (\'\' for the default layer).' -rfka '(__instantctl_custom_completion ---completion rm -- --layer (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" all' -l 'all' -d 'Remove everything of --tenant, or of every tenant.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" force' -l 'force' -d 'Remove even when changes not yet synced would be lost.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" export' -l 'export' -d 'Write the changes not yet synced to this new file first.' -rfa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl rm" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl verify" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl verify" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl verify" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl verify" deep' -l 'deep' -d 'Decompress and hash every PDF, and decode every annotation.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl verify" sample' -l 'sample' -d 'With a deep check, check only this share of the PDFs, such as 10% (implies --deep).' -rfka ''
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl verify" repair' -l 'repair' -d 'Fix what can be fixed.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl verify" rebuild-catalog' -l 'rebuild-catalog' -d 'Rebuild the catalog from the files first (needs --repair).'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl verify" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl verify" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl quarantine" -eq 1' -fa 'list' -d 'List the files in quarantine/, with each layer\'s unsynced changes.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl quarantine" -eq 1' -fa 'restore' -d 'Bring a quarantined layer back into the store.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl quarantine" -eq 1' -fa 'export' -d 'Write a quarantined layer\'s unsynced changes to a file.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine list" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine list" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine list" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine list" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine restore" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine restore" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine restore" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl quarantine restore" -eq 1' -fka '(__instantctl_custom_completion ---completion quarantine restore -- positional@0 (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine restore" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine restore" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine export" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine export" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine export" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl quarantine export" -eq 1' -fka '(__instantctl_custom_completion ---completion quarantine export -- positional@0 (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine export" to' -l 'to' -d 'The new file to write.' -rfa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'json\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine export" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl quarantine export" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl download" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl download" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl download" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl download" server' -l 'server' -d 'The server (a tenant of the store; default: the one tenant holding the document).' -rfka '(__instantctl_custom_completion ---completion download -- --server (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl download" jwt' -l 'jwt' -d 'The JWT (else --jwt-file, else $INSTANT_JWT).' -rfka ''
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl download" jwt-file' -l 'jwt-file' -d 'Read the JWT from this file, or from standard input with -.' -rfka ''
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl download" timeout' -l 'timeout' -d 'Give up after this many seconds without progress: no answer from the server, no byte of a download, or another process holding the layer\'s sync (exit status 5).' -rfka ''
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl download" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl download" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" server' -l 'server' -d 'The server (a tenant of the store; default: the one tenant holding the document).' -rfka '(__instantctl_custom_completion ---completion sync -- --server (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" jwt' -l 'jwt' -d 'The JWT (else --jwt-file, else $INSTANT_JWT).' -rfka ''
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" jwt-file' -l 'jwt-file' -d 'Read the JWT from this file, or from standard input with -.' -rfka ''
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" timeout' -l 'timeout' -d 'Give up after this many seconds without progress: no answer from the server, no byte of a download, or another process holding the layer\'s sync (exit status 5).' -rfka ''
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" watch' -l 'watch' -d 'Listen and sync until interrupted, printing each change as it arrives.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl sync" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl annotations" -eq 1' -fa 'list' -d 'List a local layer\'s annotations, with local changes not yet synced.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl annotations" -eq 1' -fa 'show' -d 'Print one annotation\'s Instant JSON (with its id).'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl annotations" -eq 1' -fa 'add' -d 'Add annotations to a local layer (pending until a sync).'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl annotations" -eq 1' -fa 'update' -d 'Replace an annotation\'s content in a local layer (pending until a sync).'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl annotations" -eq 1' -fa 'delete' -d 'Delete annotations from a local layer (pending until a sync).'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl annotations" -eq 1' -fa 'export' -d 'Write a local layer\'s annotations as an Instant JSON document.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_positional "instantctl annotations" -eq 1' -fa 'import' -d 'Apply Instant JSON to a local layer: create or replace each annotation (pending until a sync).'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations list" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations list" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations list" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations list" document' -l 'document' -d 'The document.' -rfka '(__instantctl_custom_completion ---completion annotations list -- --document (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations list" layer' -l 'layer' -d 'The layer (default: the default layer).' -rfka '(__instantctl_custom_completion ---completion annotations list -- --layer (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations list" server' -l 'server' -d 'The server (a tenant of the store; default: the one tenant holding the document).' -rfka '(__instantctl_custom_completion ---completion annotations list -- --server (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations list" pending' -l 'pending' -d 'Only the annotations with a local change not yet synced.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations list" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations show" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations show" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations show" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations show" document' -l 'document' -d 'The document.' -rfka '(__instantctl_custom_completion ---completion annotations show -- --document (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations show" layer' -l 'layer' -d 'The layer (default: the default layer).' -rfka '(__instantctl_custom_completion ---completion annotations show -- --layer (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations show" server' -l 'server' -d 'The server (a tenant of the store; default: the one tenant holding the document).' -rfka '(__instantctl_custom_completion ---completion annotations show -- --server (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations show" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations show" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations add" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations add" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations add" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations add" document' -l 'document' -d 'The document.' -rfka '(__instantctl_custom_completion ---completion annotations add -- --document (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations add" layer' -l 'layer' -d 'The layer (default: the default layer).' -rfka '(__instantctl_custom_completion ---completion annotations add -- --layer (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations add" server' -l 'server' -d 'The server (a tenant of the store; default: the one tenant holding the document).' -rfka '(__instantctl_custom_completion ---completion annotations add -- --server (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations add" file' -l 'file' -d 'Instant JSON to read (- for standard input), at most 64 MiB.' -rF
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations add" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations add" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations update" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations update" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations update" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations update" document' -l 'document' -d 'The document.' -rfka '(__instantctl_custom_completion ---completion annotations update -- --document (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations update" layer' -l 'layer' -d 'The layer (default: the default layer).' -rfka '(__instantctl_custom_completion ---completion annotations update -- --layer (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations update" server' -l 'server' -d 'The server (a tenant of the store; default: the one tenant holding the document).' -rfka '(__instantctl_custom_completion ---completion annotations update -- --server (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations update" file' -l 'file' -d 'Instant JSON to read (- for standard input), at most 64 MiB.' -rF
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations update" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations update" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations delete" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations delete" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations delete" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations delete" document' -l 'document' -d 'The document.' -rfka '(__instantctl_custom_completion ---completion annotations delete -- --document (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations delete" layer' -l 'layer' -d 'The layer (default: the default layer).' -rfka '(__instantctl_custom_completion ---completion annotations delete -- --layer (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations delete" server' -l 'server' -d 'The server (a tenant of the store; default: the one tenant holding the document).' -rfka '(__instantctl_custom_completion ---completion annotations delete -- --server (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations delete" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations delete" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations export" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations export" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations export" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations export" document' -l 'document' -d 'The document.' -rfka '(__instantctl_custom_completion ---completion annotations export -- --document (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations export" layer' -l 'layer' -d 'The layer (default: the default layer).' -rfka '(__instantctl_custom_completion ---completion annotations export -- --layer (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations export" server' -l 'server' -d 'The server (a tenant of the store; default: the one tenant holding the document).' -rfka '(__instantctl_custom_completion ---completion annotations export -- --server (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations export" output' -l 'output' -d 'Write to this file instead of standard output (- for standard output), replaced only once whole.' -rF
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations export" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations export" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations import" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations import" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations import" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations import" document' -l 'document' -d 'The document.' -rfka '(__instantctl_custom_completion ---completion annotations import -- --document (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations import" layer' -l 'layer' -d 'The layer (default: the default layer).' -rfka '(__instantctl_custom_completion ---completion annotations import -- --layer (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations import" server' -l 'server' -d 'The server (a tenant of the store; default: the one tenant holding the document).' -rfka '(__instantctl_custom_completion ---completion annotations import -- --server (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations import" file' -l 'file' -d 'Instant JSON to read (- for standard input), at most 64 MiB.' -rF
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations import" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl annotations import" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl cache" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl cache" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl cache" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl cache" tenant' -l 'tenant' -d 'Only this server\'s entries.' -rfka '(__instantctl_custom_completion ---completion cache -- --tenant (count (__instantctl_tokens -pc)) (__instantctl_tokens -tC))'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl cache" problems' -l 'problems' -d 'Only entries with something wrong (corrupted, unreferenced or inconsistent).'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl cache" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl cache" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl metrics" root' -l 'root' -d 'The store directory (default: $INSTANT_HOME, else $XDG_DATA_HOME/instant).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl metrics" json' -l 'json' -d 'Print JSON for scripts instead of tables.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl metrics" q quiet' -s 'q' -l 'quiet' -d 'Print less: no headers, summaries or progress.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl metrics" o output' -s 'o' -l 'output' -d 'Replace this file instead of printing (use a .prom name).' -rfa '(for p in (string match -e -- \'*/\' (commandline -t);or printf \n)*.\'prom\';printf %s\n $p;end;__fish_complete_directories (commandline -t) \'\')'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl metrics" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl metrics" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl demo" keep' -l 'keep' -d 'Keep the demo\'s store and server data, and print where they are.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl demo" pdfs' -l 'pdfs' -d 'A folder of PDFs to upload (the two first by name are used).' -rfa '(__instantctl_complete_directories)'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl demo" version' -l 'version' -d 'Show the version.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl demo" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'instantctl' -n '__instantctl_should_offer_completions_for_flags_or_options "instantctl help" version' -l 'version' -d 'Show the version.'
