#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
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
        if (saved != ENOENT && saved != EPERM && saved != EXDEV) {
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
