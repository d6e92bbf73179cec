#ifndef INSTANT_CZSTD_SHIM_H
#define INSTANT_CZSTD_SHIM_H
#include <zstd.h>
#include <zstd_errors.h>
#endif
