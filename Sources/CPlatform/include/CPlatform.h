#ifndef INSTANT_CPLATFORM_H
#define INSTANT_CPLATFORM_H

/// Creates the new file `path` (mode 0600) in `directory`, already holding an exclusive
/// flock on it when its name appears, so no sweeper can ever see it unlocked: the file is
/// made with O_TMPFILE, locked, then linked in. Where O_TMPFILE is not supported it falls
/// back to O_CREAT|O_EXCL followed by flock. Returns the descriptor (read-write), or -1
/// with errno set (EEXIST when `path` exists).
int instant_create_locked(const char *directory, const char *path);

#endif
