#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>
#include "CPlatform.h"

static int lock_or_close(int fd) {
    while (flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int instant_create_locked(const char *directory, const char *path) {
#if defined(__linux__) && defined(O_TMPFILE)
    int fd = open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (lock_or_close(fd) < 0) return -1;
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0) return fd;
        int saved = errno;
        close(fd);
        if (saved != ENOENT && saved != EPERM && saved != EXDEV && saved != EOPNOTSUPP && saved != ENOTSUP &&
            saved != EMLINK && saved != ENOSYS) {
            errno = saved;
            return -1;
        }
        // No /proc, or a file system that refuses the link: fall through.
    } else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
        return -1;
    }
#else
    (void)directory;
#endif
    int created = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (created < 0) return -1;
    return lock_or_close(created);
}

pid_t instant_spawn(const char *path, char *const argv[], char *const envp[], int input, int output, int error) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        errno = rc;
        return -1;
    }
    // A descriptor already in its place stays (dup2 onto itself would do nothing).
    const int sources[3] = {input, output, error};
    for (int target = 0; target < 3 && rc == 0; target++) {
        if (sources[target] != target) rc = posix_spawn_file_actions_adddup2(&actions, sources[target], target);
    }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    sigset_t empty, all;
    sigemptyset(&empty);
    sigfillset(&all);
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attributes, &empty);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attributes, &all);
    if (rc == 0) rc = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    if (rc == 0) rc = posix_spawn(&pid, path, &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return pid;
}

int instant_pipe_cloexec(int ends[2]) { return pipe2(ends, O_CLOEXEC); }
