#if defined(__linux__)
#define _GNU_SOURCE
#include <fcntl.h>
#endif
#include "CPlatform.h"

int instant_start_writeback(int fd, long long offset, long long count) {
#if defined(__linux__)
    return sync_file_range(fd, (off_t)offset, (off_t)count, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd;
    (void)offset;
    (void)count;
    return 0;
#endif
}
