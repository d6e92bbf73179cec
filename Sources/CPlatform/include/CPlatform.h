#ifndef INSTANT_CPLATFORM_H
#define INSTANT_CPLATFORM_H

/// Asks the kernel to start writing back `count` bytes of `fd` from `offset`, without
/// waiting (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`). A later fsync then has less
/// left to wait for. Returns 0, or -1 with errno set; a no-op returning 0 elsewhere.
int instant_start_writeback(int fd, long long offset, long long count);

#endif
