#ifndef INSTANT_CPLATFORM_H
#define INSTANT_CPLATFORM_H

/// Asks the kernel to start writing back `count` bytes of `fd` from `offset`, without
/// waiting (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`). A later fsync then has less
/// left to wait for. Returns 0, or -1 with errno set; a no-op returning 0 elsewhere.
int instant_start_writeback(int fd, long long offset, long long count);

/// Creates the new file `path` (mode 0600) in `directory`, already holding an exclusive
/// flock on it when its name appears, so no sweeper can ever see it unlocked: the file is
/// made with O_TMPFILE, locked, then linked in. Where O_TMPFILE is not supported it falls
/// back to O_CREAT|O_EXCL followed by flock. Returns the descriptor (read-write), or -1
/// with errno set (EEXIST when `path` exists).
int instant_create_locked(const char *directory, const char *path);

#endif
