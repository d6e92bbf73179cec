#ifndef INSTANT_CPLATFORM_H
#define INSTANT_CPLATFORM_H

#include <sys/types.h>

/// Creates the new file `path` (mode 0600) in `directory`, already holding an exclusive
/// flock on it when its name appears, so no sweeper can ever see it unlocked: the file is
/// made with O_TMPFILE, locked, then linked in. Where O_TMPFILE is not supported it falls
/// back to O_CREAT|O_EXCL followed by flock. Returns the descriptor (read-write), or -1
/// with errno set (EEXIST when `path` exists).
int instant_create_locked(const char *directory, const char *path);

/// Starts the program at `path` with `argv` and `envp` (NULL-terminated), its standard
/// input, output and error on `input`, `output` and `error`, and no other descriptor of
/// this process open in it (glibc's closefrom action; a descriptor another thread opens
/// meanwhile without O_CLOEXEC cannot leak). Its signal mask is empty and every signal
/// has its default action, whatever the calling thread blocks or this process ignores.
/// Returns its pid, or -1 with errno set.
///
/// Why not Foundation's `Process`: in Swift 6.3.1 its `run()` reads past a buffer while
/// it lists /proc/self/fd and crashes now and then (swift-corelibs-foundation#5472), more
/// often the more descriptors the process holds.
pid_t instant_spawn(const char *path, char *const argv[], char *const envp[], int input, int output, int error);

/// pipe2(ends, O_CLOEXEC), which Swift's Glibc does not import.
int instant_pipe_cloexec(int ends[2]);

#endif
